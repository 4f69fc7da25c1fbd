use super::*;

#[test]
fn closest_prefers_smaller_edit_distance() {
    let names = ["search", "web_search", "echo", "sleep"];
    assert_eq!(closest("serch", names.into_iter(), 3), vec!["search"]);
    assert_eq!(
        closest("websearch", names.into_iter(), 3),
        vec!["web_search", "search"]
    );
}

#[test]
fn closest_counts_a_transposition_as_one_edit() {
    let names = ["echo", "fail", "sleep"];
    assert_eq!(closest("ehco", names.into_iter(), 3), vec!["echo"]);
    assert_eq!(closest("fial", names.into_iter(), 3), vec!["fail"]);
    assert_eq!(closest("slepe", names.into_iter(), 3), vec!["sleep"]);
}

#[test]
fn openai_mapping_replaces_dots_and_keeps_short_names() {
    assert_eq!(
        model_name("fs.read_file", NameProfile::Openai),
        "fs_read_file"
    );
    assert_eq!(
        model_name("fs.read_file", NameProfile::Anthropic),
        "fs_read_file"
    );
    assert_eq!(model_name("fs.read_file", NameProfile::Mcp), "fs.read_file");
    let exact = "a".repeat(64);
    assert_eq!(model_name(&exact, NameProfile::Openai), exact);
}

/// A tool that is only a name: these tests never call it.
fn tool(name: &str) -> Arc<dyn Tool> {
    Arc::new(crate::tool::FnTool::new(
        name,
        "",
        serde_json::json!({"type": "object"}),
        |_ctx, _args| async { Ok(crate::tool::ToolOutput::text("")) },
    ))
}

#[test]
fn external_tools_that_collide_are_left_out_whatever_their_order() {
    let source = ToolSource::External {
        name: "MCP server s".into(),
    };
    for order in [["s.a.b", "s.a_b"], ["s.a_b", "s.a.b"]] {
        let mut registry = Registry::new(NameProfile::Openai);
        registry
            .insert(tool("s_native"), ToolSource::Native, false)
            .unwrap();
        let tools = order
            .iter()
            .chain(&["s.native", "s.alias", "s.ok"])
            .map(|n| (source.clone(), tool(n), false))
            .collect();
        let taken = HashMap::from([("s_alias".to_owned(), "an alias".to_owned())]);
        registry.insert_external(tools, &taken);
        let names: Vec<&str> = registry.entries().map(|(n, _)| n).collect();
        assert_eq!(names, ["s.ok", "s_native"]);
        let left_out: Vec<&str> = registry
            .left_out()
            .iter()
            .map(|l| l.tool.as_str())
            .collect();
        assert_eq!(left_out, [order[0], order[1], "s.native", "s.alias"]);
    }
}

#[test]
fn openai_mapping_of_a_long_name_is_a_fixed_hash_suffix() {
    // Pinned: a model-facing name must not change between releases.
    let long = format!("catalog.{}", "x".repeat(80));
    let mapped = model_name(&long, NameProfile::Openai);
    assert_eq!(mapped.len(), 64);
    assert_eq!(mapped, format!("catalog_{}_528ef302", "x".repeat(47)));
}
