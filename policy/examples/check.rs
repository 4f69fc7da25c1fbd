//! Checks policy files: `cargo run -p toolgate-policy --example check -- FILE...`.
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for arg in std::env::args_os().skip(1) {
        match toolgate_policy::load_file(arg.as_ref()) {
            Ok(_) => println!("{}: ok", std::path::Path::new(&arg).display()),
            Err(e) => {
                println!("{e}");
                code = ExitCode::FAILURE;
            }
        }
    }
    code
}
