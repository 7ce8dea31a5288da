//! `[output.timeseries]`: which flows' transport state to follow, and how
//! often ([`crate::metrics::timeseries`]).

use crate::engine::RngStreams;
use crate::error::{Error, Result};
use crate::metrics::timeseries::SeriesSpec;
use crate::packet::FlowId;
use crate::time::parse_duration;
use crate::workload::Workload;
use serde::{Deserialize, Serialize};

/// The `[output.timeseries]` table. The flows followed are those listed in
/// `flows` or tagged with one of `tags` (every flow when neither is
/// given); `sample = N` keeps N of them, drawn at random from the run's
/// seed. With `interval`, every variable of every followed flow is read
/// at that interval; without it, after every event at the flow's hosts,
/// the variables that changed.
#[derive(Clone, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TimeseriesConfig {
    /// Flow ids to follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<u32>>,
    /// Follow the flows with these workload tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Keep this many of the flows selected, at random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<u64>,
    /// Read the flows at this interval, e.g. `"10us"` (default: after every
    /// change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

impl TimeseriesConfig {
    /// The flows to follow in `workload`, every field checked; errors
    /// name the field.
    pub fn spec(&self, workload: &Workload, seed: u64) -> Result<SeriesSpec> {
        let n = workload.flows.len();
        let interval = match &self.interval {
            None => None,
            Some(s) => {
                let d = parse_duration(s)
                    .map_err(|m| Error::config("output.timeseries.interval", m))?;
                if d.ps() == 0 {
                    return Err(Error::config(
                        "output.timeseries.interval",
                        "must be positive",
                    ));
                }
                Some(d)
            }
        };
        let mut chosen = vec![false; n];
        let listed = self.flows.is_some() || self.tags.is_some();
        if let Some(flows) = &self.flows {
            for (i, &f) in flows.iter().enumerate() {
                if f as usize >= n {
                    return Err(Error::config(
                        format!("output.timeseries.flows[{i}]"),
                        format!("flow {f} does not exist (the run has {n} flows, ids from 0)"),
                    ));
                }
                chosen[f as usize] = true;
            }
        }
        if let Some(tags) = &self.tags {
            for (i, t) in tags.iter().enumerate() {
                let Some(tag) = workload.tags.iter().position(|x| x == t) else {
                    return Err(Error::config(
                        format!("output.timeseries.tags[{i}]"),
                        format!("no workload has the tag {t:?}"),
                    ));
                };
                for f in &workload.flows {
                    if f.tag as usize == tag {
                        chosen[f.id.idx()] = true;
                    }
                }
            }
        }
        let mut flows: Vec<FlowId> = (0..n)
            .filter(|&i| !listed || chosen[i])
            .map(|i| FlowId(i as u32))
            .collect();
        if let Some(k) = self.sample {
            if k == 0 {
                return Err(Error::config(
                    "output.timeseries.sample",
                    "must be at least 1",
                ));
            }
            // A partial Fisher-Yates shuffle on the run's own stream.
            let mut rng = RngStreams::new(seed).stream("output.timeseries", 0);
            let k = (k as usize).min(flows.len());
            for i in 0..k {
                let j = i + rng.below((flows.len() - i) as u64) as usize;
                flows.swap(i, j);
            }
            flows.truncate(k);
            flows.sort_unstable();
        }
        Ok(SeriesSpec { flows, interval })
    }
}
