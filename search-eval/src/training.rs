//! Which queries an embedding model was fitted to: the check that holds
//! `scripts/distill_static.py`'s `training.json` to [`tune_part_of`]'s parts, and where the
//! mirror model for the fusion tuning lives.

use std::path::{Path, PathBuf};

use crate::{Dataset, TunePart, semantic_model_dir, tune_part_of};

/// The mirror model: [`semantic_model_dir`] with `-mirror` appended to its name, where
/// `scripts/model.sh --mirror` distils the same model fitted to the tune half's *fuse* part
/// instead of its fit part. Only the fusion tuning reads it: it ranks the fit part with the
/// mirror and the fuse part with the model, so that the fusion is chosen on the whole tune half,
/// each query ranked by a model that never saw it (cross-fitting).
pub fn semantic_mirror_model_dir() -> PathBuf {
    let mut dir = semantic_model_dir().into_os_string();
    dir.push("-mirror");
    PathBuf::from(dir)
}

/// Why a model's `training.json` (written by `scripts/distill_static.py`) does not say it was
/// fitted to exactly the queries of one tune part.
#[derive(Debug, thiserror::Error)]
pub enum TrainingError {
    /// The file could not be read.
    #[error("cannot read {path} (a model distilled before it was written: run scripts/model.sh)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}: not JSON")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The queries the model saw differ from the part's.
    #[error(
        "{path}: on {dataset} the model saw {seen} queries, the {part:?} part has {expected}; \
         {unexpected} seen outside the part (first: {first:?}), {missing} of the part not seen"
    )]
    Queries {
        /// The file.
        path: PathBuf,
        /// The data set.
        dataset: String,
        /// The tune part the model should have been fitted to.
        part: TunePart,
        /// How many queries of the set the model saw.
        seen: usize,
        /// How many queries the part has.
        expected: usize,
        /// How many of the seen queries are not in the part.
        unexpected: usize,
        /// The first of those, if any.
        first: Option<String>,
        /// How many of the part's queries the model did not see.
        missing: usize,
    },
}

/// Checks that the model in `model_dir` was fitted to exactly the `part` queries of each of
/// `datasets` (by its `training.json`): a model that saw held-out queries flatters the held-out
/// figures, and one that saw the queries the fusion is chosen on makes the fusion over-trust it.
/// The distiller repeats [`tune_part_of`] in Python; this holds the two to the same queries.
pub fn check_training(
    model_dir: &Path,
    part: TunePart,
    datasets: &[Dataset],
) -> Result<(), TrainingError> {
    let path = model_dir.join("training.json");
    let text = std::fs::read_to_string(&path).map_err(|source| TrainingError::Io {
        path: path.clone(),
        source,
    })?;
    let training: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| TrainingError::Parse {
            path: path.clone(),
            source,
        })?;
    for data in datasets {
        let mut expected: Vec<&str> = data
            .queries
            .iter()
            .filter(|q| tune_part_of(&q.id) == Some(part))
            .map(|q| q.id.as_str())
            .collect();
        expected.sort_unstable();
        let mut seen: Vec<&str> = training["query_ids"][data.name.as_str()]
            .as_array()
            .map(|ids| ids.iter().filter_map(|id| id.as_str()).collect())
            .unwrap_or_default();
        seen.sort_unstable();
        let unexpected: Vec<&str> = seen
            .iter()
            .copied()
            .filter(|id| expected.binary_search(id).is_err())
            .collect();
        let missing = expected
            .iter()
            .filter(|id| seen.binary_search(id).is_err())
            .count();
        if expected.is_empty()
            || !unexpected.is_empty()
            || missing > 0
            || seen.len() != expected.len()
        {
            return Err(TrainingError::Queries {
                path,
                dataset: data.name.clone(),
                part,
                seen: seen.len(),
                expected: expected.len(),
                unexpected: unexpected.len(),
                first: unexpected.first().map(|id| id.to_string()),
                missing,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EvalQuery;

    fn dataset_of(ids: &[&str]) -> Dataset {
        Dataset {
            name: "set".to_string(),
            catalog: Vec::new(),
            queries: ids
                .iter()
                .map(|id| EvalQuery {
                    id: id.to_string(),
                    query: "q".to_string(),
                    relevant: Vec::new(),
                })
                .collect(),
        }
    }

    /// A model directory whose `training.json` lists `seen` as the set's query ids.
    fn model_that_saw(seen: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let json = serde_json::json!({ "part": "fit", "query_ids": { "set": seen } });
        std::fs::write(dir.path().join("training.json"), json.to_string()).expect("write");
        dir
    }

    fn ids_in(part: Option<TunePart>) -> Vec<String> {
        (0..200)
            .map(|i| format!("q{i}"))
            .filter(|id| tune_part_of(id) == part)
            .collect()
    }

    #[test]
    fn check_training_accepts_a_model_fitted_to_exactly_the_part() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let fit = ids_in(Some(TunePart::Fit));
        let fit: Vec<&str> = fit.iter().rev().map(String::as_str).collect();
        let dir = model_that_saw(&fit);
        check_training(dir.path(), TunePart::Fit, &[dataset_of(&all)]).expect("fitted to the part");
    }

    #[test]
    fn check_training_names_a_held_out_query_the_model_saw() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let held = ids_in(None);
        let mut seen = ids_in(Some(TunePart::Fit));
        seen.push(held[0].clone());
        let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
        let dir = model_that_saw(&seen);
        let err = check_training(dir.path(), TunePart::Fit, &[dataset_of(&all)])
            .expect_err("a held-out query was seen");
        match err {
            TrainingError::Queries {
                unexpected,
                first,
                missing,
                ..
            } => {
                assert_eq!(unexpected, 1);
                assert_eq!(first.as_deref(), Some(held[0].as_str()));
                assert_eq!(missing, 0);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn check_training_counts_the_part_queries_the_model_missed() {
        let all: Vec<String> = (0..200).map(|i| format!("q{i}")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let fuse = ids_in(Some(TunePart::Fuse));
        let seen: Vec<&str> = fuse[1..].iter().map(String::as_str).collect();
        let dir = model_that_saw(&seen);
        let err = check_training(dir.path(), TunePart::Fuse, &[dataset_of(&all)])
            .expect_err("one fuse query unseen");
        assert!(
            matches!(
                err,
                TrainingError::Queries {
                    missing: 1,
                    unexpected: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn check_training_says_which_file_is_missing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = check_training(dir.path(), TunePart::Fit, &[dataset_of(&["q1"])])
            .expect_err("no training.json");
        assert!(matches!(err, TrainingError::Io { .. }), "{err}");
        assert!(err.to_string().contains("training.json"), "{err}");
    }

    #[test]
    fn mirror_model_dir_is_the_model_dir_with_a_mirror_suffix() {
        let model = semantic_model_dir();
        let mirror = semantic_mirror_model_dir();
        assert_eq!(mirror.parent(), model.parent());
        assert_eq!(
            mirror
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string),
            model
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| format!("{n}-mirror"))
        );
    }
}
