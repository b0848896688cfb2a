//! What a running gateway holds between the host's calls: the core's `HostGateway`, the usage
//! readers of the answers passing through it, and the summary jobs handed out and not yet taken.
//! Below both the engine, which holds one while the host runs a gateway, and the gateway's
//! methods (`gateway_api`), which act on it.

use std::collections::HashMap;

use condense_core::gateway::{HostGateway, SummaryJob, UsageReader};

/// The running gateway, the usage readers of the answers passing through it, and the summary
/// jobs handed out and not yet taken.
pub(crate) struct RunningGateway {
    pub(crate) host: HostGateway,
    /// Each answer's reader by id: its session, its bill, the reader.
    pub(crate) readers: HashMap<u32, (String, Option<u64>, UsageReader)>,
    pub(crate) next_reader: u32,
    pub(crate) jobs: HashMap<u64, SummaryJob>,
}

impl RunningGateway {
    /// A gateway just started, no answer nor job yet.
    pub(crate) fn new(host: HostGateway) -> Self {
        RunningGateway { host, readers: HashMap::new(), next_reader: 0, jobs: HashMap::new() }
    }
}
