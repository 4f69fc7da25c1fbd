//! Every server's resources, resource templates and prompts in one table, and which server a
//! read, a get or a completion goes to.
//!
//! Names (A3):
//!
//! * a resource keeps its URI: the client reads what the server listed. A URI is routed to the
//!   server that lists it (its normal form compared, so another spelling of it routes too), else
//!   to the server whose resource template it matches. A URI that two servers list is left out
//!   of both, with a warning; so is a template two servers list. A URI that templates of two
//!   servers match is refused, naming both; a listed URI wins over every template.
//! * a prompt is `<server>.<prompt>`, like a tool: it cannot collide with another server's.
//! * a template keeps its text; a completion for it goes to the server that lists it.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{Prompt, Resource, ResourceTemplate};

use super::lists::{Declared, Offered};
use super::template::UriTemplate;

/// The table, built from the servers' lists; rebuilt whenever one of them changes.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// What some server declared.
    pub(crate) declared: Declared,
    /// Kept resources, with their server's index, in server order.
    pub(crate) resources: Vec<(usize, Resource)>,
    /// Kept templates.
    pub(crate) templates: Vec<(usize, ResourceTemplate, UriTemplate)>,
    /// Kept prompts, named `<server>.<prompt>`, with the name on the server.
    pub(crate) prompts: Vec<(usize, Prompt, String)>,
    /// A listed URI, in normal form -> its server.
    by_uri: HashMap<String, usize>,
    /// A template's text -> its server.
    by_template: HashMap<String, usize>,
    /// `<server>.<prompt>` -> index into `prompts`.
    by_prompt: HashMap<String, usize>,
    /// A line for each item left out of the table, with its server's index.
    pub(crate) left_out: Vec<(usize, String)>,
}

/// Where a URI goes, or why nowhere.
pub(crate) type Routed = Result<usize, String>;

impl Catalog {
    /// The table of `servers` (name and lists, in policy order).
    pub(crate) fn build(servers: &[(&str, Arc<Offered>)]) -> Catalog {
        let mut catalog = Catalog::default();
        let mut uri_owners: HashMap<String, Vec<usize>> = HashMap::new();
        let mut template_owners: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, (_, offered)) in servers.iter().enumerate() {
            let d = offered.declared;
            catalog.declared.resources |= d.resources;
            catalog.declared.subscribe |= d.subscribe;
            catalog.declared.prompts |= d.prompts;
            catalog.declared.completions |= d.completions;
            for resource in &offered.resources {
                uri_owners.entry(normal(&resource.uri)).or_default().push(i);
            }
            for (template, _) in &offered.templates {
                template_owners
                    .entry(template.uri_template.as_str())
                    .or_default()
                    .push(i);
            }
        }
        let others = |owners: &[usize], me: usize| -> String {
            owners
                .iter()
                .filter(|o| **o != me)
                .map(|o| servers[*o].0)
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (i, (server, offered)) in servers.iter().enumerate() {
            for resource in &offered.resources {
                let key = normal(&resource.uri);
                let owners = &uri_owners[&key];
                if owners.len() > 1 {
                    catalog.left_out.push((
                        i,
                        format!(
                            "its resource {:?} is also listed by the MCP server {}; it is left out of all of them",
                            toolgate::error::cut_name(&resource.uri),
                            others(owners, i)
                        ),
                    ));
                    continue;
                }
                catalog.by_uri.insert(key, i);
                catalog.resources.push((i, resource.clone()));
            }
            for (template, parsed) in &offered.templates {
                let owners = &template_owners[template.uri_template.as_str()];
                if owners.len() > 1 {
                    catalog.left_out.push((
                        i,
                        format!(
                            "its resource template {:?} is also listed by the MCP server {}; it is left out of all of them",
                            toolgate::error::cut_name(&template.uri_template),
                            others(owners, i)
                        ),
                    ));
                    continue;
                }
                catalog.by_template.insert(template.uri_template.clone(), i);
                catalog
                    .templates
                    .push((i, template.clone(), parsed.clone()));
            }
            for prompt in &offered.prompts {
                let mut named = prompt.clone();
                named.name = format!("{server}.{}", prompt.name);
                catalog
                    .by_prompt
                    .insert(named.name.clone(), catalog.prompts.len());
                catalog.prompts.push((i, named, prompt.name.clone()));
            }
        }
        catalog
    }

    /// The server to read `uri` (as the client sent it) from (see the module docs).
    pub(crate) fn route_uri(&self, uri: &str, names: &[String]) -> Routed {
        if let Some(server) = self.by_uri.get(&normal(uri)) {
            return Ok(*server);
        }
        let mut matched: Vec<usize> = self
            .templates
            .iter()
            .filter(|(_, _, parsed)| parsed.matches(uri))
            .map(|(server, _, _)| *server)
            .collect();
        matched.dedup();
        match matched.as_slice() {
            [server] => Ok(*server),
            [] => Err(
                "no MCP server of the policy lists this resource or a resource template it matches"
                    .to_owned(),
            ),
            several => Err(format!(
                "resource templates of several MCP servers match it ({}); toolgate does not guess which one to ask",
                several
                    .iter()
                    .map(|s| names[*s].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Whether a server lists `uri` (in any spelling of it).
    pub(crate) fn lists_uri(&self, uri: &str) -> bool {
        self.by_uri.contains_key(&normal(uri))
    }

    /// The server that lists the template `text`.
    pub(crate) fn route_template(&self, text: &str) -> Option<usize> {
        self.by_template.get(text).copied()
    }

    /// The server of the prompt `name` (`<server>.<prompt>`) and its name there.
    pub(crate) fn route_prompt(&self, name: &str) -> Option<(usize, &str)> {
        let (server, _, remote) = &self.prompts[*self.by_prompt.get(name)?];
        Some((*server, remote.as_str()))
    }
}

/// The form URIs are compared in: normal when it has one.
fn normal(uri: &str) -> String {
    toolgate::access::normalize_uri(uri).unwrap_or_else(|_| uri.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn offered(resources: &[&str], templates: &[&str], prompts: &[&str]) -> Arc<Offered> {
        Arc::new(Offered {
            declared: Declared {
                resources: true,
                subscribe: false,
                prompts: !prompts.is_empty(),
                completions: false,
            },
            resources: resources
                .iter()
                .map(|u| serde_json::from_value(json!({"uri": u, "name": u})).unwrap())
                .collect(),
            templates: templates
                .iter()
                .map(|t| {
                    (
                        serde_json::from_value(json!({"uriTemplate": t, "name": t})).unwrap(),
                        UriTemplate::parse(t).unwrap(),
                    )
                })
                .collect(),
            prompts: prompts
                .iter()
                .map(|p| serde_json::from_value(json!({"name": p})).unwrap())
                .collect(),
            left_out: Vec::new(),
        })
    }

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn a_uri_two_servers_list_is_left_out_of_both_and_the_rest_stays() {
        let c = Catalog::build(&[
            ("a", offered(&["x://same", "x://only-a"], &[], &[])),
            ("b", offered(&["x://same"], &[], &[])),
        ]);
        let uris: Vec<&str> = c.resources.iter().map(|(_, r)| r.uri.as_str()).collect();
        assert_eq!(uris, ["x://only-a"]);
        assert_eq!(c.left_out.len(), 2);
        assert!(c.left_out[0].1.contains("also listed by the MCP server b"));
        assert!(c.route_uri("x://same", &names()).is_err());
    }

    #[test]
    fn a_listed_uri_wins_over_templates_and_another_spelling_routes_too() {
        let c = Catalog::build(&[
            ("a", offered(&["x://h/doc"], &[], &[])),
            ("b", offered(&[], &["x://h/{name}"], &[])),
        ]);
        assert_eq!(c.route_uri("x://h/doc", &names()), Ok(0));
        assert_eq!(c.route_uri("x://H/./doc", &names()), Ok(0));
        assert_eq!(c.route_uri("x://h/other", &names()), Ok(1));
    }

    #[test]
    fn a_uri_that_templates_of_two_servers_match_is_refused_naming_both() {
        let c = Catalog::build(&[
            ("a", offered(&[], &["x://{+any}"], &[])),
            ("b", offered(&[], &["x://h/{name}"], &[])),
        ]);
        let e = c.route_uri("x://h/n", &names()).unwrap_err();
        assert!(e.contains("(a, b)"), "{e}");
    }

    #[test]
    fn prompts_are_named_by_server_and_routed_to_their_name_there() {
        let c = Catalog::build(&[
            ("a", offered(&[], &[], &["hello"])),
            ("b", offered(&[], &[], &["hello"])),
        ]);
        assert_eq!(c.route_prompt("b.hello"), Some((1, "hello")));
        assert_eq!(c.route_prompt("hello"), None);
        assert_eq!(c.prompts.len(), 2);
    }
}
