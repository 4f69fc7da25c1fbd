//! URI templates (RFC 6570), read far enough to tell whether a URI is one of a template's: a
//! read of a URI no server lists goes to the server whose resource template matches it.
//!
//! Matching inverts the expansion loosely: a simple variable (`{id}`) stands for one or more
//! characters other than `/`, `?`, `#`; a reserved or fragment one (`{+path}`, `{#f}`) for any
//! characters (the fragment one after a `#`); a path, label or parameter one (`{/a}`, `{.ext}`,
//! `{;p}`) for nothing or its prefix and characters other than `?`, `#`; a query one
//! (`{?q}`, `{&r}`) for nothing or its prefix and anything up to a `#`. Literal text must match
//! exactly. Matching backtracks, with a bound on the work.

use std::fmt;

/// The most variables a template may have.
const MAX_VARIABLES: usize = 32;
/// The most steps one match may take; past them the URI does not match.
const MAX_STEPS: usize = 100_000;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(Operator),
}

/// What an expression's operator lets its expansion hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    /// `{x}`: one or more characters, none of `/?#`.
    Simple,
    /// `{+x}`: one or more characters, none of `#`.
    Reserved,
    /// `{#x}`: nothing, or `#` and anything.
    Fragment,
    /// `{/x}`, `{.x}`, `{;x}`: nothing, or the prefix and characters other than `?#`.
    Prefixed(char),
    /// `{?x}`, `{&x}`: nothing, or the prefix and characters other than `#`.
    Query(char),
}

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TemplateError {
    #[error("the {{ at byte {0} is not closed")]
    Unclosed(usize),
    #[error("the }} at byte {0} closes nothing")]
    Unopened(usize),
    #[error("the expression at byte {0} names no variable")]
    Empty(usize),
    #[error("it has more than {MAX_VARIABLES} expressions")]
    TooMany,
}

impl UriTemplate {
    pub(crate) fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        let mut variables = 0;
        while let Some((at, c)) = rest.next() {
            match c {
                '{' => {
                    let mut body = String::new();
                    let mut closed = false;
                    for (_, c) in rest.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        body.push(c);
                    }
                    if !closed {
                        return Err(TemplateError::Unclosed(at));
                    }
                    let (operator, names) = match body.chars().next() {
                        Some('+') => (Operator::Reserved, &body[1..]),
                        Some('#') => (Operator::Fragment, &body[1..]),
                        Some(p @ ('/' | '.' | ';')) => (Operator::Prefixed(p), &body[1..]),
                        Some(p @ ('?' | '&')) => (Operator::Query(p), &body[1..]),
                        _ => (Operator::Simple, body.as_str()),
                    };
                    if names.trim().is_empty() {
                        return Err(TemplateError::Empty(at));
                    }
                    variables += 1;
                    if variables > MAX_VARIABLES {
                        return Err(TemplateError::TooMany);
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Variable(operator));
                }
                '}' => return Err(TemplateError::Unopened(at)),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(UriTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// Whether `uri` is one of this template's expansions (see the module docs).
    pub(crate) fn matches(&self, uri: &str) -> bool {
        let chars: Vec<char> = uri.chars().collect();
        let mut steps = 0;
        match_from(&self.parts, &chars, &mut steps)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn match_from(parts: &[Part], rest: &[char], steps: &mut usize) -> bool {
    *steps += 1;
    if *steps > MAX_STEPS {
        return false;
    }
    let Some((part, later)) = parts.split_first() else {
        return rest.is_empty();
    };
    match part {
        Part::Literal(text) => {
            let n = text.chars().count();
            rest.len() >= n
                && rest[..n].iter().copied().eq(text.chars())
                && match_from(later, &rest[n..], steps)
        }
        Part::Variable(operator) => {
            let (prefix, allowed, at_least): (Option<char>, fn(char) -> bool, usize) =
                match *operator {
                    Operator::Simple => (None, |c| !matches!(c, '/' | '?' | '#'), 1),
                    Operator::Reserved => (None, |c| c != '#', 1),
                    Operator::Fragment => (Some('#'), |_| true, 0),
                    Operator::Prefixed(p) => (Some(p), |c| !matches!(c, '?' | '#'), 0),
                    Operator::Query(p) => (Some(p), |c| c != '#', 0),
                };
            // A prefixed expression may expand to nothing at all.
            if prefix.is_some() && match_from(later, rest, steps) {
                return true;
            }
            let body = match prefix {
                Some(p) if rest.first() == Some(&p) => &rest[1..],
                Some(_) => return false,
                None => rest,
            };
            let longest = body.iter().take_while(|c| allowed(**c)).count();
            (at_least..=longest)
                .rev()
                .any(|n| match_from(later, &body[n..], steps))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> UriTemplate {
        UriTemplate::parse(text).unwrap()
    }

    #[test]
    fn a_simple_variable_stands_for_one_path_segment() {
        let tpl = t("demo://resource/dynamic/text/{resourceId}");
        assert!(tpl.matches("demo://resource/dynamic/text/7"));
        assert!(!tpl.matches("demo://resource/dynamic/text/"));
        assert!(!tpl.matches("demo://resource/dynamic/text/7/8"));
        assert!(!tpl.matches("demo://resource/dynamic/blob/7"));
    }

    #[test]
    fn a_reserved_variable_crosses_slashes() {
        let tpl = t("file:///{+path}");
        assert!(tpl.matches("file:///a/b/c.txt"));
        assert!(!tpl.matches("http:///a"));
    }

    #[test]
    fn query_and_path_expressions_may_be_empty() {
        let tpl = t("api://items{/id}{?page,size}");
        assert!(tpl.matches("api://items"));
        assert!(tpl.matches("api://items/3"));
        assert!(tpl.matches("api://items/3?page=2&size=9"));
        assert!(!tpl.matches("api://itemz"));
    }

    #[test]
    fn literal_text_between_variables_must_match() {
        let tpl = t("db://{schema}/tables/{table}");
        assert!(tpl.matches("db://main/tables/users"));
        assert!(!tpl.matches("db://main/views/users"));
    }

    #[test]
    fn bad_templates_are_refused() {
        assert_eq!(UriTemplate::parse("a{b"), Err(TemplateError::Unclosed(1)));
        assert_eq!(UriTemplate::parse("a}b"), Err(TemplateError::Unopened(1)));
        assert_eq!(UriTemplate::parse("a{}"), Err(TemplateError::Empty(1)));
    }

    #[test]
    fn a_pathological_uri_fails_within_the_step_bound() {
        let tpl = t(&"{+a}x".repeat(20));
        let uri = "x".repeat(200) + "y";
        assert!(!tpl.matches(&uri));
    }
}
