//! The `s3://` backend's settings (feature `s3`): options, environment, and defaults that fail fast.

use std::collections::BTreeMap;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::{BackoffConfig, RetryConfig};

use crate::error::ConfigError;

/// Default client settings for S3, chosen so that an unreachable store fails a tool call within seconds
/// instead of the minutes of `object_store`'s defaults (SPEC R9 wants the failure reported, not a hang).
const S3_DEFAULTS: &[(&str, &str)] = &[("connect_timeout", "5s"), ("timeout", "60s")];
const DEFAULT_MAX_RETRIES: usize = 3;
const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(15);

/// The S3 client for `bucket`: `options` first, then the `AWS_*` environment, then [`S3_DEFAULTS`].
pub(super) fn from_options(
    bucket: &str,
    options: &BTreeMap<String, String>,
) -> Result<AmazonS3, ConfigError> {
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    let mut retry = RetryConfig {
        max_retries: DEFAULT_MAX_RETRIES,
        retry_timeout: DEFAULT_RETRY_TIMEOUT,
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(50),
            ..BackoffConfig::default()
        },
    };
    for (key, value) in S3_DEFAULTS {
        if !options.contains_key(*key)
            && std::env::var(format!("AWS_{}", key.to_uppercase())).is_err()
        {
            builder = builder.with_config(key_of(key)?, *value);
        }
    }
    for (key, value) in options {
        match key.as_str() {
            "max_retries" => {
                retry.max_retries =
                    value
                        .trim()
                        .parse()
                        .map_err(|_| ConfigError::NotAWholeNumber {
                            key: key.clone(),
                            value: value.clone(),
                        })?;
            }
            "retry_timeout" => retry.retry_timeout = parse_duration(key, value)?,
            _ => builder = builder.with_config(key_of(key)?, value),
        }
    }
    builder
        .with_retry(retry)
        .build()
        .map_err(|error| ConfigError::S3Client {
            bucket: bucket.to_owned(),
            error,
        })
}

fn key_of(key: &str) -> Result<AmazonS3ConfigKey, ConfigError> {
    key.parse().map_err(|_| ConfigError::UnknownOption {
        key: key.to_owned(),
    })
}

/// A duration in the grammar of object_store's own duration options (`timeout`,
/// `connect_timeout`): `"500ms"`, `"15s"`, `"1m 30s"`, ...
fn parse_duration(key: &str, value: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(value.trim()).map_err(|_| ConfigError::NotADuration {
        key: key.to_owned(),
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_timeout_reads_durations_as_object_stores_own_timeouts_do() {
        assert_eq!(
            parse_duration("k", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_duration("k", "2s").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_duration("k", "1m 30s").unwrap(),
            Duration::from_secs(90)
        );
    }

    #[test]
    fn retry_timeout_without_a_unit_is_not_a_duration() {
        assert!(matches!(
            parse_duration("retry_timeout", "3"),
            Err(ConfigError::NotADuration { .. })
        ));
        assert!(parse_duration("retry_timeout", "soon").is_err());
    }
}
