//! Standard base64, the encoding of image parts.

use base64::Engine as _;

/// Encodes bytes as standard base64 with padding (RFC 4648 §4), the form image parts use.
///
/// ```
/// assert_eq!(toolgate_plugin_api::encode_base64(b"Man"), "TWFu");
/// assert_eq!(toolgate_plugin_api::encode_base64(b"Ma"), "TWE=");
/// ```
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_test_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in vectors {
            assert_eq!(encode_base64(input.as_bytes()), expected, "input {input:?}");
        }
    }

    #[test]
    fn base64_uses_plus_and_slash_for_the_last_two_symbols() {
        assert_eq!(encode_base64(&[0xfb, 0xff]), "+/8=");
    }
}
