//! What the commands share: the policy (given or built in), the engine built from it, the
//! session, and reading a conversation from a file or standard input.

use std::path::{Path, PathBuf};

use toolgate::{Engine, Policy};
use toolgate_mcp::upstream::Problem;

use crate::error::{CliError, Input};

/// The policy used when `--policy` is not given.
pub const DEFAULT_POLICY: &str = include_str!("../default-policy.yaml");
/// How errors and the summary name the built-in policy.
pub const DEFAULT_POLICY_NAME: &str = "<embedded default policy>";

/// Where offloaded results go when the policy turns reduction on without naming a store: a
/// folder of the user's, so that a result saved by one `toolgate` process can be read by the
/// next (R8). `$TOOLGATE_RESULTS_DIR`, else `$XDG_DATA_HOME/toolgate/results`, else
/// `~/.local/share/toolgate/results`, else the temporary directory.
pub const RESULTS_DIR_ENV: &str = "TOOLGATE_RESULTS_DIR";

/// Loads the policy at `path`, or the built-in one; returns it with the name errors use.
pub fn load_policy(path: Option<&Path>) -> Result<(Policy, String), CliError> {
    match path {
        Some(path) => {
            let name = path.display().to_string();
            tracing::info!(policy = %name, "loading policy");
            Ok((toolgate_policy::load_file(path)?, name))
        }
        None => {
            tracing::info!("loading the built-in default policy");
            let policy = toolgate_policy::load_str(DEFAULT_POLICY, Path::new(DEFAULT_POLICY_NAME))?;
            Ok((policy, DEFAULT_POLICY_NAME.to_string()))
        }
    }
}

/// Builds the engine; `name` is the policy's name, for the problems the engine knows no
/// position of. The policy's upstream MCP servers (`mcp_servers:`) are started first; one that
/// does not start costs only its own tools, and is logged as a warning.
pub fn build(policy: Policy, name: &str) -> Result<Engine, CliError> {
    let (engine, problems) = build_reporting(policy, name)?;
    for problem in problems {
        tracing::warn!("{problem}");
    }
    Ok(engine)
}

/// [`build`], with the problems of the policy's upstream MCP servers returned rather than
/// logged (`validate` reports them as errors).
pub fn build_reporting(policy: Policy, name: &str) -> Result<(Engine, Vec<Problem>), CliError> {
    let needs_store = policy.reduction.as_ref().is_some_and(|r| r.store.is_none());
    let servers = policy.mcp_servers.clone();
    let (mut builder, problems) = crate::upstream::attach(&servers, Engine::builder(policy));
    if needs_store {
        builder = builder.default_store_url(default_store_url()?);
    }
    let engine = builder.build().map_err(|source| CliError::Build {
        policy: name.to_string(),
        source: Box::new(source),
    })?;
    Ok((engine, problems))
}

/// Loads the policy (or the built-in one) and builds the engine; also returns the policy's name.
pub fn load_engine(path: Option<&Path>) -> Result<(Engine, String), CliError> {
    let (policy, name) = load_policy(path)?;
    Ok((build(policy, &name)?, name))
}

/// The results folder (see [`RESULTS_DIR_ENV`]) as a `file://` URL, created if missing.
pub fn default_store_url() -> Result<String, CliError> {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = env_dir(RESULTS_DIR_ENV)
        .or_else(|| env_dir("XDG_DATA_HOME").map(|d| d.join("toolgate").join("results")))
        .or_else(|| {
            env_dir("HOME").map(|d| {
                d.join(".local")
                    .join("share")
                    .join("toolgate")
                    .join("results")
            })
        })
        .unwrap_or_else(|| std::env::temp_dir().join("toolgate-results"));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if let Err(source) = std::fs::create_dir_all(&dir) {
        return Err(CliError::ResultsDir {
            dir,
            env: RESULTS_DIR_ENV,
            source,
        });
    }
    tracing::debug!(dir = %dir.display(), "offloaded results go to this folder");
    match url::Url::from_directory_path(&dir) {
        Ok(url) => Ok(url.into()),
        Err(()) => Err(CliError::ResultsDirUrl { dir }),
    }
}

/// Reads a conversation from a file, or from standard input for `-` or nothing; returns the
/// text and the name positions in it use.
pub fn read_input(file: Option<&Path>) -> Result<(String, String), CliError> {
    let input = match file {
        Some(path) if path != Path::new("-") => Input::File(path.to_path_buf()),
        _ => Input::Stdin,
    };
    let read = match &input {
        Input::File(path) => std::fs::read_to_string(path),
        Input::Stdin => std::io::read_to_string(std::io::stdin()),
    };
    match read {
        Ok(text) => Ok((text, input.position_name())),
        Err(source) => Err(CliError::Read { input, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_policy_loads() {
        toolgate_policy::load_str(DEFAULT_POLICY, Path::new(DEFAULT_POLICY_NAME)).unwrap();
    }

    #[test]
    fn a_missing_policy_file_is_a_policy_error() {
        let err = load_policy(Some(Path::new("/no/such/policy.yaml"))).unwrap_err();
        assert_eq!(err.code(), crate::error::EXIT_POLICY);
        assert!(
            err.report().starts_with("/no/such/policy.yaml: "),
            "{}",
            err.report()
        );
    }
}
