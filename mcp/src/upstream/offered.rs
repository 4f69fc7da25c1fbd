//! What the upstream servers offer now, read for pinning (`toolgate upstream pin`): the
//! definitions [`pins`](super::pins) hashes.

use std::collections::BTreeMap;

use super::pins::{Definitions, keyed, tool_definition, values};
use super::set::{Problem, Upstreams};

impl Upstreams {
    /// What each server offers now, for pinning: its tools as last listed, and its resources,
    /// resource templates and prompts when it declares them. A server that is not running, or
    /// that fails to list what it declares, is an error for that server (nothing of it should
    /// be pinned half).
    pub async fn definitions(&self) -> Vec<Result<Definitions, Problem>> {
        let servers = self.servers().iter().map(|server| async move {
            let problem = |message: String| Problem {
                server: server.name().to_owned(),
                position: server.spec.position.clone(),
                message,
            };
            if let Some(error) = server.start_error() {
                return Err(problem(format!("did not start: {error}")));
            }
            let peer = server
                .peer(&tokio_util::sync::CancellationToken::new())
                .await
                .map_err(|e| problem(e.to_string()))?;
            let listed = server.tools();
            let tools = listed
                .tools
                .iter()
                .map(|tool| (tool.name.to_string(), tool_definition(tool)))
                .collect();
            let declared = peer.peer_info().map(|info| info.capabilities.clone());
            let listing =
                |what: &str, e: rmcp::ServiceError| problem(format!("cannot list its {what}: {e}"));
            let mut definitions = Definitions {
                server: server.name().to_owned(),
                tools,
                resources: BTreeMap::new(),
                resource_templates: BTreeMap::new(),
                prompts: BTreeMap::new(),
            };
            if declared.as_ref().is_some_and(|c| c.resources.is_some()) {
                let resources = peer
                    .list_all_resources()
                    .await
                    .map_err(|e| listing("resources", e))?;
                definitions.resources = keyed(values(resources), "uri");
                let templates = peer
                    .list_all_resource_templates()
                    .await
                    .map_err(|e| listing("resource templates", e))?;
                definitions.resource_templates = keyed(values(templates), "uriTemplate");
            }
            if declared.as_ref().is_some_and(|c| c.prompts.is_some()) {
                let prompts = peer
                    .list_all_prompts()
                    .await
                    .map_err(|e| listing("prompts", e))?;
                definitions.prompts = keyed(values(prompts), "name");
            }
            Ok(definitions)
        });
        futures::future::join_all(servers).await
    }
}
