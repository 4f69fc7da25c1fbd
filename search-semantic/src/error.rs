//! Why an embedding model or a tool-vectors file could not be used.

use std::path::PathBuf;

/// An error loading an embedding model, or reading or writing tool vectors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SemanticError {
    /// A model or vectors file could not be read or written.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A model's JSON file (`config.json`, `tokenizer.json`) is not valid JSON of the expected shape.
    #[error("{path} is not a usable model file")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The model directory holds something this build cannot use.
    #[error("{path} is not a usable static embedding model: {reason}")]
    BadModel {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file does not start with the tool-vectors magic bytes.
    #[error("{path} is not a toolgate tool-vectors file: wrong magic bytes")]
    BadMagic {
        /// The vectors file.
        path: PathBuf,
    },
    /// The vectors file has another format version.
    #[error(
        "{path} is a tool-vectors file of format version {found}, this build reads version {expected}: rebuild the index"
    )]
    UnsupportedVersion {
        /// The vectors file.
        path: PathBuf,
        /// The version this build reads.
        expected: u32,
        /// The version the file has.
        found: u32,
    },
    /// The vectors file is shorter or longer than its header says.
    #[error(
        "{path} is not a usable tool-vectors file: it is {actual} bytes, its header says {stated}"
    )]
    LengthMismatch {
        /// The vectors file.
        path: PathBuf,
        /// The length the header implies.
        stated: u64,
        /// The file's length.
        actual: u64,
    },
    /// The vectors file's checksum does not match its content.
    #[error("{path} is not a usable tool-vectors file: checksum mismatch (corrupted)")]
    Checksum {
        /// The vectors file.
        path: PathBuf,
    },
    /// The vectors file's checksum matches but a value in it is unusable (a non-finite or
    /// negative scale, a non-finite mean).
    #[error("{path} is not a usable tool-vectors file: {reason}")]
    BadVectors {
        /// The vectors file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The vectors file was computed with another model.
    #[error(
        "{path} was computed with another embedding model (model id {found:016x}, this one is {expected:016x}): rebuild the index"
    )]
    OtherModel {
        /// The vectors file.
        path: PathBuf,
        /// The id of the model in use.
        expected: u64,
        /// The id recorded in the file.
        found: u64,
    },
    /// The vectors file holds other tools than the index.
    #[error("{path} holds vectors for other tools than the index: rebuild the index")]
    OtherTools {
        /// The vectors file.
        path: PathBuf,
    },
}
