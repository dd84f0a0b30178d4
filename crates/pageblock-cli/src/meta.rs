//! [`RunMeta`]: what made a result, for the `"meta"` object of every JSON the CLI writes —
//! pageblock's version and git revision, the command line, and the seed and `--quick`
//! where they apply — so that a saved result says how to make it again.

use serde::Serialize;

/// What made a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunMeta {
    /// pageblock's version (`CARGO_PKG_VERSION`).
    pub pageblock_version: &'static str,
    /// The git revision it was built from (`git rev-parse --short HEAD` at build time;
    /// `unknown` when built outside a git checkout).
    pub git_revision: &'static str,
    /// The command line, as run.
    pub command: String,
    /// The workload seed, for commands that have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--quick`, for commands that have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quick: Option<bool>,
}

/// A result with its [`RunMeta`] as a `"meta"` field next to its own (`T` must serialize
/// as a JSON object).
#[derive(Debug, Serialize)]
pub struct WithMeta<'a, T> {
    /// What made it.
    pub meta: &'a RunMeta,
    /// The result's own fields.
    #[serde(flatten)]
    pub result: &'a T,
}

impl RunMeta {
    /// The meta of `command` (seed and `--quick` unset).
    pub fn new(command: impl Into<String>) -> Self {
        RunMeta {
            pageblock_version: env!("CARGO_PKG_VERSION"),
            git_revision: env!("PAGEBLOCK_GIT_REVISION"),
            command: command.into(),
            seed: None,
            quick: None,
        }
    }

    /// The meta of this process's command line.
    pub fn of_this_process() -> Self {
        let args: Vec<String> = std::env::args().collect();
        Self::new(args.join(" "))
    }

    /// With the workload seed.
    pub fn seed(self, seed: u64) -> Self {
        RunMeta { seed: Some(seed), ..self }
    }

    /// With `--quick`.
    pub fn quick(self, quick: bool) -> Self {
        RunMeta { quick: Some(quick), ..self }
    }

    /// `result` with this meta, to serialize.
    pub fn with<'a, T: Serialize>(&'a self, result: &'a T) -> WithMeta<'a, T> {
        WithMeta { meta: self, result }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Result {
        lines: u64,
    }

    #[test]
    fn meta_sits_beside_the_result_s_fields() {
        let meta = RunMeta::new("pageblock lab seeds --quick").seed(7).quick(true);
        let v = serde_json::to_value(meta.with(&Result { lines: 3 })).unwrap();
        assert_eq!(v["lines"], 3);
        let m = &v["meta"];
        assert_eq!(m["pageblock_version"], env!("CARGO_PKG_VERSION"));
        assert!(m["git_revision"].as_str().is_some_and(|r| !r.is_empty()), "{m}");
        assert_eq!(
            (m["command"].as_str(), m["seed"].as_u64(), m["quick"].as_bool()),
            (Some("pageblock lab seeds --quick"), Some(7), Some(true))
        );
        let bare = serde_json::to_value(RunMeta::new("pageblock replay t")).unwrap();
        assert!(bare.get("seed").is_none() && bare.get("quick").is_none(), "only where they apply: {bare}");
    }
}
