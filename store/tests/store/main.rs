//! Integration tests of toolgate-store, one binary: the behaviour suite per backend, bad input, the
//! `Validated` boundary, scoping, and several OS processes sharing one store.

mod backends;
mod bad_input;
mod behaviours;
mod common;
mod damaged;
mod interrupted;
mod processes;
mod scoping;
mod sessions;
mod validated;
