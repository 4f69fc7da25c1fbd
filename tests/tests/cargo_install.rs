//! `cargo install --path cli` (issue 31, item 2) gives a `toolgate` that runs the README's main
//! command from any folder: in an empty one with a copy of `examples/turn.json`, nothing else.
//!
//! scripts/test.sh installs it first, with the dev profile into `target/cargo-install`
//! (`cargo install --path cli --debug --root target/cargo-install --target-dir target`, which
//! reuses the workspace's build), so this test builds nothing itself.

mod anywhere;

use anywhere::{assert_runs_the_readme_turn, build_dir, folder_with_turn};

#[test]
fn the_cargo_installed_program_runs_the_readme_turn_in_an_empty_folder() {
    let (build, _) = build_dir();
    let program = build
        .parent()
        .expect("the target folder")
        .join("cargo-install/bin/toolgate");
    assert!(
        program.is_file(),
        "{} does not exist: run `cargo install --path cli --debug --locked --offline --root \
         target/cargo-install --target-dir target` (scripts/test.sh does) first",
        program.display()
    );
    let work = folder_with_turn();
    assert_runs_the_readme_turn(&program, work.path(), &[]);
}
