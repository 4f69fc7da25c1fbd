//! The `s3` cargo feature (off by default, on in the `toolgate` CLI): without it, a policy that keeps
//! results on S3 fails when the engine is built, with an error that says why; with it, the policy builds.

use toolgate::{Engine, Policy};
use toolgate_policy::ReductionSettings;

fn s3_policy() -> Policy {
    Policy {
        reduction: Some(ReductionSettings {
            store: Some("s3://bucket/prefix".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The error's text and the texts of every source under it.
#[cfg(not(feature = "s3"))]
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(err), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(not(feature = "s3"))]
#[tokio::test]
async fn a_policy_with_an_s3_store_fails_to_build_without_the_s3_feature() {
    let Err(err) = Engine::builder(s3_policy()).build() else {
        panic!("an S3 store was opened in a build without the s3 feature");
    };
    let text = chain(&err);
    assert!(
        text.contains("this program was built without the s3 feature"),
        "{text}"
    );
}

#[cfg(feature = "s3")]
#[tokio::test]
async fn a_policy_with_an_s3_store_builds_with_the_s3_feature() {
    if let Err(err) = Engine::builder(s3_policy()).build() {
        panic!("the S3 store did not open: {err}");
    }
}
