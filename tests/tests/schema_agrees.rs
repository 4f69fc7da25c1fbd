//! The policy JSON Schema and the loader agree: every probe policy below is accepted by both or
//! refused by both. The schema side does not touch toolgate's code: the venv's PyYAML reads the
//! YAML and the venv's `jsonschema` (Draft 2020-12) validates it against
//! `schemas/policy.schema.json`. The loader side is `toolgate validate`.
//!
//! PyYAML speaks YAML 1.1 (`yes` and `on` are booleans, `1_000` is a number, `<<` merges), so
//! the script below resolves plain scalars itself, by the YAML 1.2 core schema as
//! `docs/policy.md` restricts it: only `true`/`false` are booleans, `.inf`/`.nan` stay
//! strings. It also applies the YAML-level rules of `docs/policy.md` that JSON cannot carry
//! (JSON has no tags, no duplicate keys, no merge keys): such a probe is refused before the
//! schema sees it.

use toolgate_e2e::{serde_json, toolgate, venv_python_run};

/// Reads `[[name, yaml], ...]` on stdin; prints `{name: "accept" | "refuse: why"}`.
const SCHEMA_SIDE: &str = r#"
import json, re, sys
import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode
from jsonschema import Draft202012Validator

class Refused(Exception):
    pass

class Loader(yaml.SafeLoader):
    """Composes nodes without resolving plain scalars (done below, YAML 1.2 core schema)."""
    def resolve(self, kind, value, implicit):
        if kind is ScalarNode:
            return "!plain" if implicit[0] else "!quoted"
        return "!seq" if kind is SequenceNode else "!map"

STR = "tag:yaml.org,2002:str"
INT = re.compile(r"[-+]?[0-9]+\Z")
OCT = re.compile(r"0o[0-7]+\Z")
HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")

def plain(text):
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "false"):
        return text == "true"
    if INT.match(text):
        return int(text)
    if OCT.match(text):
        return int(text[2:], 8)
    if HEX.match(text):
        return int(text[2:], 16)
    if FLOAT.match(text):
        return float(text)
    return text

def convert(node):
    if isinstance(node, ScalarNode):
        if node.tag == "!plain":
            return plain(node.value)
        if node.tag in ("!quoted", STR):
            return node.value
        raise Refused("tag " + node.tag)
    if isinstance(node, SequenceNode):
        if node.tag != "!seq":
            raise Refused("tag " + node.tag)
        return [convert(item) for item in node.value]
    if node.tag != "!map":
        raise Refused("tag " + node.tag)
    out = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            raise Refused("a key that is not a scalar")
        if key_node.tag == "!plain" and key_node.value == "<<":
            raise Refused("merge key")
        key = convert(key_node)
        key = json.dumps(key) if not isinstance(key, str) else key
        if key in out:
            raise Refused("duplicate key " + key)
        out[key] = convert(value_node)
    return out

schema = json.load(open("schemas/policy.schema.json"))
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
verdicts = {}
for name, text in json.load(sys.stdin):
    try:
        node = yaml.compose(text, Loader=Loader)
        if node is None:
            raise Refused("empty")
        errors = [e.message for e in validator.iter_errors(convert(node))]
        verdicts[name] = "refuse: " + errors[0] if errors else "accept"
    except (Refused, yaml.YAMLError) as e:
        verdicts[name] = "refuse: " + str(e).replace("\n", " ")
print(json.dumps(verdicts))
"#;

/// `(name, policy, accepted)`: what both sides must say, and why each probe is here.
const PROBES: &[(&str, &str, bool)] = &[
    ("minimal", "version: 1\n", true),
    ("version as an integral float", "version: 1.0\n", true),
    ("version 2", "version: 2\n", false),
    // Integral floats are whole numbers, on both sides (JSON Schema counts 5.0 as an integer).
    (
        "integral float cap",
        "version: 1\ndispatch: {max_result_chars: 5.0}\n",
        true,
    ),
    (
        "exponent cap",
        "version: 1\ndispatch: {max_result_chars: 1e3}\n",
        true,
    ),
    (
        "integral float concurrency",
        "version: 1\ndispatch: {concurrency: 4.0}\n",
        true,
    ),
    (
        "fractional cap",
        "version: 1\ndispatch: {max_result_chars: 5.5}\n",
        false,
    ),
    (
        "fractional size",
        "version: 1\nreduction: {max_result_bytes: 0.5}\n",
        false,
    ),
    (
        "integral float size",
        "version: 1\nreduction: {max_result_bytes: 2.5e3}\n",
        true,
    ),
    // Big integers: up to 2^53 - 1, the largest whole number a float holds exactly.
    (
        "largest whole number",
        "version: 1\ndispatch: {max_result_chars: 9007199254740991}\n",
        true,
    ),
    (
        "2^53",
        "version: 1\ndispatch: {max_result_chars: 9007199254740992}\n",
        false,
    ),
    (
        "above i64",
        "version: 1\ndispatch: {max_result_chars: 99999999999999999999}\n",
        false,
    ),
    (
        "above u64 size",
        "version: 1\nreduction: {min_offload_bytes: 99999999999999999999}\n",
        false,
    ),
    (
        "huge exponent",
        "version: 1\nsearch: {default_max_results: 1e300}\n",
        false,
    ),
    (
        "hex cap",
        "version: 1\ndispatch: {max_result_chars: 0x10}\n",
        true,
    ),
    (
        "float overflow",
        "version: 1\ndispatch: {max_result_chars: 1e400}\n",
        false,
    ),
    // Underscores are not digits in YAML 1.2: `1_000` is a string.
    (
        "underscore digits",
        "version: 1\ndispatch: {concurrency: 1_000}\n",
        false,
    ),
    (
        "quoted number",
        "version: 1\ndispatch: {max_result_chars: \"5\"}\n",
        false,
    ),
    // Negative limits.
    (
        "no cap",
        "version: 1\ndispatch: {max_result_chars: -1}\n",
        true,
    ),
    (
        "cap below -1",
        "version: 1\ndispatch: {max_result_chars: -2}\n",
        false,
    ),
    (
        "negative size",
        "version: 1\nreduction: {preview_head_chars: -1}\n",
        false,
    ),
    (
        "zero concurrency",
        "version: 1\ndispatch: {concurrency: 0}\n",
        false,
    ),
    (
        "negative tool cap",
        "version: 1\ntools: {\"fs.*\": {max_result_chars: -1.0}}\n",
        true,
    ),
    // Durations.
    ("duration", "version: 1\ndispatch: {timeout: 1m30s}\n", true),
    (
        "all units",
        "version: 1\ndispatch: {timeout: 1h2m3s4ms}\n",
        true,
    ),
    (
        "units out of order",
        "version: 1\ndispatch: {timeout: 30s1m}\n",
        false,
    ),
    (
        "repeated unit",
        "version: 1\ndispatch: {timeout: 1s1s}\n",
        false,
    ),
    (
        "overflowing duration",
        "version: 1\ndispatch: {timeout: 99999999999999999999h}\n",
        false,
    ),
    (
        "12-digit duration",
        "version: 1\ndispatch: {timeout: 999999999999ms}\n",
        true,
    ),
    (
        "bare number duration",
        "version: 1\ndispatch: {timeout: 30}\n",
        false,
    ),
    (
        "no timeout",
        "version: 1\ntools: {t: {timeout: none}}\n",
        true,
    ),
    // Booleans: only lower-case true and false.
    ("true", "version: 1\ndispatch: {sequential: true}\n", true),
    ("True", "version: 1\ndispatch: {sequential: True}\n", false),
    (
        "FALSE",
        "version: 1\ndispatch: {stop_on_error: FALSE}\n",
        false,
    ),
    (
        "yes",
        "version: 1\nsearch: {allow_direct_calls: yes}\n",
        false,
    ),
    (
        "on",
        "version: 1\nreduction: {hide_foreign_results: on}\n",
        false,
    ),
    (
        "quoted true",
        "version: 1\ndispatch: {sequential: \"true\"}\n",
        false,
    ),
    // Tags: only !!str on a scalar.
    (
        "str tag",
        "version: 1\ntools: {t: {sequential_group: !!str 42}}\n",
        true,
    ),
    (
        "map tag",
        "version: 1\ndispatch: !!map {concurrency: 3}\n",
        false,
    ),
    (
        "seq tag",
        "version: 1\nsearch: {catalogs: !!seq []}\n",
        false,
    ),
    (
        "int tag",
        "version: 1\ndispatch: {concurrency: !!int 3}\n",
        false,
    ),
    (
        "custom tag",
        "version: 1\ndispatch: {timeout: !env TIMEOUT}\n",
        false,
    ),
    // Merge keys are YAML 1.1; a quoted "<<" is just a key (here a tool pattern).
    (
        "merge key",
        "version: 1\ntools:\n  a: &base {timeout: 5s}\n  b:\n    <<: *base\n",
        false,
    ),
    (
        "quoted << key",
        "version: 1\ntools:\n  \"<<\": {timeout: 5s}\n",
        true,
    ),
    // Anchors and aliases of whole values work.
    (
        "alias",
        "version: 1\ntools:\n  a: &t {timeout: 5s}\n  b: *t\n",
        true,
    ),
    (
        "alias into the wrong place",
        "version: 1\ndispatch: &d {concurrency: 2}\ntools:\n  b: *d\n",
        false,
    ),
    // Unknown and duplicate keys.
    (
        "unknown top-level key",
        "version: 1\ndispatchh: {}\n",
        false,
    ),
    (
        "unknown nested key",
        "version: 1\ndispatch: {timeoutt: 5s}\n",
        false,
    ),
    (
        "unknown rule key",
        "version: 1\nrules: {deny: [{tool: [a]}]}\n",
        false,
    ),
    (
        "duplicate key",
        "version: 1\ndispatch: {timeout: 5s, timeout: 6s}\n",
        false,
    ),
    // Store URLs: only the schemes the store knows.
    (
        "memory store",
        "version: 1\nreduction: {store: \"memory://\"}\n",
        true,
    ),
    (
        "ftp store",
        "version: 1\nreduction: {store: \"ftp://host/x\"}\n",
        false,
    ),
    (
        "store option number",
        "version: 1\nreduction: {store: \"memory://\", store_options: {region: 5}}\n",
        false,
    ),
    // Sections and shapes.
    ("empty reduction", "version: 1\nreduction: {}\n", true),
    ("null reduction", "version: 1\nreduction:\n", false),
    (
        "plugin with name and path",
        "version: 1\nplugins: [{name: a, path: b}]\n",
        false,
    ),
    ("empty file", "", false),
    ("a list", "- version: 1\n", false),
];

#[test]
fn the_schema_and_the_loader_agree_on_every_probe() {
    let dir = tempfile::tempdir().unwrap();
    let input: Vec<(&str, &str)> = PROBES.iter().map(|(n, y, _)| (*n, *y)).collect();
    let run = venv_python_run(SCHEMA_SIDE, &[], &serde_json::to_string(&input).unwrap());
    assert_eq!(run.code, 0, "the schema side failed: {run:#?}");
    let verdicts: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();

    let mut disagreements = Vec::new();
    for (i, (name, yaml, accepted)) in PROBES.iter().enumerate() {
        let path = dir.path().join(format!("probe{i}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        let loader = toolgate(&["validate", path.to_str().unwrap()]);
        loader.assert_no_panic();
        assert!(
            loader.code == 0 || loader.code == 3,
            "{name}: exit {}",
            loader.code
        );
        let schema = verdicts[*name].as_str().unwrap_or("missing");
        let schema_accepts = schema == "accept";
        let loader_accepts = loader.code == 0;
        if schema_accepts != *accepted || loader_accepts != *accepted {
            disagreements.push(format!(
                "{name}: expected {}, schema says {schema}, loader says {}",
                if *accepted { "accept" } else { "refuse" },
                if loader_accepts {
                    "accept".to_owned()
                } else {
                    format!("refuse: {}", loader.stderr.trim())
                }
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} probe(s) disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}
