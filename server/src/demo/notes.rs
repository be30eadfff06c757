//! The demo's notes: a short list in memory, newest first, bounded so a page that writes in
//! a loop cannot grow the process.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// At most this many notes are kept; the oldest go first.
pub const KEPT: usize = 20;
/// A note's longest text, in characters.
pub const LONGEST: usize = 200;

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub at: String,
}

#[derive(Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<Note>>>);

impl Notes {
    /// Adds a note (trimmed; 1 to `LONGEST` characters) and returns the list, newest first.
    pub fn add(&self, text: &str) -> Result<Vec<Note>, &'static str> {
        let text = text.trim();
        if text.is_empty() {
            return Err("a note needs some text");
        }
        if text.chars().count() > LONGEST {
            return Err("a note is at most 200 characters");
        }
        let at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .unwrap_or_default();
        let mut notes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        notes.insert(
            0,
            Note {
                text: text.to_owned(),
                at,
            },
        );
        notes.truncate(KEPT);
        Ok(notes.clone())
    }

    pub fn list(&self) -> Vec<Note> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_trimmed_newest_first_and_bounded() {
        let notes = Notes::default();
        for n in 0..KEPT + 5 {
            notes.add(&format!(" note {n} ")).unwrap();
        }
        let list = notes.list();
        assert_eq!(list.len(), KEPT);
        assert_eq!(list[0].text, format!("note {}", KEPT + 4));
    }

    #[test]
    fn empty_and_overlong_notes_are_refused() {
        let notes = Notes::default();
        assert!(notes.add(" \n ").is_err());
        assert!(notes.add(&"x".repeat(LONGEST + 1)).is_err());
        assert!(notes.add(&"é".repeat(LONGEST)).is_ok());
    }
}
