//! TEMPORARY STUB: replaced by the workload module on merge.
use crate::net::packet::{FlowId, NodeId};
use crate::time::Time;

/// One flow to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub id: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    pub size: u64,
    pub start: Time,
    pub tag: u16,
}
/// Flows plus tag names.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub flows: Vec<FlowSpec>,
    pub tags: Vec<String>,
}
/// Workload config.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadConfig {
    Static { pairs: Vec<[u32; 2]>, size: u64 },
}
/// Environment.
pub struct WorkloadEnv<'a> {
    pub n_hosts: u32,
    pub host_rate: crate::time::Rate,
    pub mss: u32,
    pub header_bytes: u32,
    pub base_dir: &'a std::path::Path,
    pub host_names: &'a [String],
    pub streams: crate::engine::RngStreams,
}
/// Generate.
pub fn generate(cfgs: &[WorkloadConfig], _env: &WorkloadEnv) -> crate::Result<Workload> {
    let mut flows = Vec::new();
    for c in cfgs {
        match c {
            WorkloadConfig::Static { pairs, size } => {
                for p in pairs {
                    flows.push(FlowSpec {
                        id: FlowId(flows.len() as u32),
                        src: NodeId(p[0]),
                        dst: NodeId(p[1]),
                        size: *size,
                        start: Time::ZERO,
                        tag: 0,
                    });
                }
            }
        }
    }
    Ok(Workload {
        flows,
        tags: vec!["static".into()],
    })
}
