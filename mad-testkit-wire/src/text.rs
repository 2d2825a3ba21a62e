//! Assertions on a command's or console's text output.

/// Asserts that `text` contains each of `parts`; a failure names the
/// first missing part and shows the whole text.
#[track_caller]
pub fn assert_contains_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            text.contains(part),
            "output lacks {part:?}; the output:\n{text}"
        );
    }
}
