//! Tool names (N1): the one rule every real tool name and every tool-name alias obeys,
//! whatever the name profile later maps it to.

/// The longest tool name, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// Why a tool name breaks N1: 1 to [`MAX_TOOL_NAME_BYTES`] bytes of `[A-Za-z0-9_.-]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// The name is empty.
    #[error("a name must be 1 to 128 bytes; this one is empty")]
    Empty,
    /// The name is longer than [`MAX_TOOL_NAME_BYTES`].
    #[error("a name must be at most 128 bytes; this one is {bytes} bytes")]
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// The name holds a character outside `[A-Za-z0-9_.-]`.
    #[error(
        "character {character:?} at byte {offset} is not allowed (only A-Z, a-z, 0-9, '_', '.', '-')"
    )]
    Character {
        /// The first character not allowed.
        character: char,
        /// Its byte offset in the name.
        offset: usize,
    },
}

/// Checks `name` against N1: 1 to 128 bytes of `[A-Za-z0-9_.-]`.
///
/// # Errors
///
/// [`ToolNameError`] says which part of the rule the name breaks.
///
/// ```
/// use toolgate_policy::{ToolNameError, check_tool_name};
///
/// assert!(check_tool_name("fs.read_file").is_ok());
/// assert_eq!(check_tool_name(""), Err(ToolNameError::Empty));
/// assert!(matches!(check_tool_name("a b"), Err(ToolNameError::Character { character: ' ', offset: 1 })));
/// ```
pub fn check_tool_name(name: &str) -> Result<(), ToolNameError> {
    if name.is_empty() {
        return Err(ToolNameError::Empty);
    }
    if name.len() > MAX_TOOL_NAME_BYTES {
        return Err(ToolNameError::TooLong { bytes: name.len() });
    }
    match name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        Some((offset, character)) => Err(ToolNameError::Character { character, offset }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_of_the_allowed_characters_passes() {
        assert_eq!(check_tool_name("fs.read_file-2"), Ok(()));
        assert_eq!(check_tool_name(&"a".repeat(MAX_TOOL_NAME_BYTES)), Ok(()));
    }

    #[test]
    fn a_name_over_128_bytes_is_too_long() {
        assert_eq!(
            check_tool_name(&"a".repeat(129)),
            Err(ToolNameError::TooLong { bytes: 129 })
        );
    }

    #[test]
    fn the_first_character_not_allowed_is_named_with_its_byte_offset() {
        assert_eq!(
            check_tool_name("aé/b"),
            Err(ToolNameError::Character {
                character: 'é',
                offset: 1
            })
        );
    }
}
