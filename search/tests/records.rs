//! The stored tools of a real catalog read back exactly as they were given.
//!
//! Reads the data sets from `$TOOLGATE_DATASETS` or `../shared/datasets/toolsearch` beside the
//! workspace, as the quality test does; fails, saying so, if they are missing.

use toolgate_search::SearchIndex;
use toolgate_search_eval::{self as eval, DATASETS};

#[test]
fn every_tool_of_every_dataset_reads_back_from_a_written_index_as_given() {
    let dir = eval::datasets_dir();
    assert!(
        dir.is_dir(),
        "data set directory {} is missing: put shared/datasets/toolsearch beside the workspace or set {}",
        dir.display(),
        eval::DATASETS_ENV
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    for name in DATASETS {
        let data = eval::load_dataset(&dir, name).unwrap_or_else(|e| panic!("{e}"));
        let path = tmp.path().join(format!("{name}.idx"));
        SearchIndex::build(&data.catalog)
            .expect("catalog indexes")
            .write(&path)
            .expect("index writes");
        let index = SearchIndex::open(&path).expect("index opens");
        assert_eq!(index.len(), data.catalog.len(), "{name}");
        for doc in &data.catalog {
            let got = index
                .get(&doc.name)
                .unwrap_or_else(|| panic!("{name}: {} is not stored", doc.name));
            assert_eq!(got.description, doc.description, "{name}: {}", doc.name);
            // The schema's text, as tool_search returns it, byte for byte.
            let json = serde_json::to_string(&doc.parameters).expect("schema prints");
            assert_eq!(got.parameters_json, json, "{name}: {}", doc.name);
            assert_eq!(got.aliases, doc.aliases, "{name}: {}", doc.name);
            assert_eq!(got.keywords, doc.keywords, "{name}: {}", doc.name);
        }
    }
}
