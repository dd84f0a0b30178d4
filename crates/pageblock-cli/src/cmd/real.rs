//! `pageblock lab real` and its hidden worker: the command lines, read into
//! `pageblock_live::real`'s configuration, and the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use pageblock_live::real::workload::{Build, BuildSource, Bursts, Churn, Workload, PARTS};
use pageblock_live::real::{self, knobs, worker, RealConfig, Setting};
use pageblock_live::record::Progress;

use crate::cli::{RealArgs, RealLoadArgs, RealWorkerCommand};
use crate::progress::Recording;
use crate::size::parse_size;

/// Runs a session (or `--restore`); its exit code: 0, 1 after a failure, 128 + the signal
/// that cut it short.
pub fn main(args: &RealArgs) -> ExitCode {
    if let Some(dir) = &args.restore {
        let path = dir
            .as_ref()
            .map_or_else(|| PathBuf::from(knobs::JOURNAL_RUN_PATH), |d| d.join(knobs::JOURNAL_FILE));
        return match knobs::restore_journal(&path) {
            Ok(n) => {
                eprintln!("pageblock lab real: restored {n} settings from {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    if let Some(dir) = &args.compare {
        return match compare(dir, args.seeds) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    let cfg = match config(args) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let progress = || -> Box<dyn Progress> { Box::new(Recording::new()) };
    match real::run(&cfg, &progress) {
        Ok(outcome) => {
            print!("{}", outcome.summary.render());
            eprintln!("pageblock lab real: runs and table in {}", outcome.output.display());
            ExitCode::from(outcome.code)
        }
        Err(e) => {
            eprintln!("pageblock: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}

/// `--compare DIR`: the prediction table, also written beside the runs.
fn compare(dir: &std::path::Path, seeds: u32) -> Result<String, String> {
    use pageblock_lab::replay::predict;
    let predictions = predict::predict(dir, seeds, &mut |run| {
        eprintln!("pageblock lab real: replaying {}", run.display())
    })?;
    let text = predict::render(&predictions);
    let out = |name: &str| crate::output::create_output(Some(&dir.join(name)));
    if let Some(f) = out("prediction.txt")? {
        f.write_text(&text)?;
    }
    if let Some(f) = out("prediction.json")? {
        f.write_json(
            &crate::meta::RunMeta::of_this_process().with(&serde_json::json!({ "predictions": predictions })),
        )?;
    }
    Ok(text)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("pageblock: {message}");
    ExitCode::FAILURE
}

fn mib(text: &str, what: &str) -> Result<u64, String> {
    let bytes = parse_size(text).map_err(|e| format!("{what}: {e}"))?;
    if bytes < 1 << 20 {
        return Err(format!("{what} `{text}`: at least 1M"));
    }
    Ok(bytes >> 20)
}

fn list<T>(text: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.is_empty() {
        return Err(format!("{what}: empty list"));
    }
    items.iter().map(|s| parse(s).ok_or_else(|| format!("{what}: `{s}` is not a valid value"))).collect()
}

/// The session the command line describes, or why it makes no sense.
pub fn config(args: &RealArgs) -> Result<RealConfig, String> {
    let parts: Vec<&str> = args.workload.split(',').map(str::trim).collect();
    if let Some(bad) = parts.iter().find(|p| !PARTS.contains(p)) {
        return Err(format!("--workload: unknown part `{bad}`; known: {}", PARTS.join(", ")));
    }
    let available_mib = match args.available.as_str() {
        "none" => None,
        s => Some(mib(s, "--available")?),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let build = parts.contains(&"build").then(|| Build {
        source: args
            .build_tree
            .clone()
            .map_or(BuildSource::Synthetic { files: args.build_files }, BuildSource::Tree),
        jobs: args.build_jobs.unwrap_or(cpus),
    });
    if build.is_none() && (args.build_tree.is_some() || args.build_jobs.is_some()) {
        return Err("--build-tree and --build-jobs need `build` in --workload".into());
    }
    let bursts = parts
        .contains(&"bursts")
        .then(|| mib(&args.bursts, "--bursts").map(|m| Bursts { mib: m, period_ms: args.bursts_period_ms }))
        .transpose()?;
    let churn_mib = match &args.churn {
        Some(s) => mib(s, "--churn")?,
        None => available_mib.map_or(4096, |a| 2 * a),
    };
    let churn = parts.contains(&"churn").then_some(Churn { mib: churn_mib });
    let thp_enabled =
        list(&args.thp, "--thp", |s| ["always", "madvise", "never"].contains(&s).then(|| s.to_owned()))?;
    let thp_defrag = list(&args.thp_defrag, "--thp-defrag", |s| {
        ["always", "defer", "defer+madvise", "madvise", "never"].contains(&s).then(|| s.to_owned())
    })?;
    let modes = list(&args.defrag_mode, "--defrag-mode", |s| s.parse::<u8>().ok().filter(|m| *m <= 1))?;
    let mut settings = Vec::new();
    for &defrag_mode in &modes {
        for e in &thp_enabled {
            for d in &thp_defrag {
                settings.push(Setting { defrag_mode, thp_enabled: e.clone(), thp_defrag: d.clone() });
            }
        }
    }
    let sysctls = args
        .sysctl
        .iter()
        .map(|s| {
            let (name, value) =
                s.split_once('=').ok_or_else(|| format!("--sysctl `{s}`: expected NAME=VALUE"))?;
            let name = name.trim().strip_prefix("vm.").unwrap_or(name.trim());
            if name.is_empty() || name.contains('/') || name.contains("..") {
                return Err(format!("--sysctl `{s}`: not a vm sysctl name"));
            }
            if name == "defrag_mode" {
                return Err("--sysctl vm.defrag_mode: use --defrag-mode".into());
            }
            Ok((name.to_owned(), value.trim().to_owned()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    Ok(RealConfig {
        output: args.output.clone(),
        workload: Workload { build, bursts, churn, duration_s: args.duration },
        settings,
        sysctls,
        runs: args.runs as usize,
        warmup: args.warmup as usize,
        available_mib,
        swap_mib: args.swap.as_deref().map(|s| mib(s, "--swap")).transpose()?,
        work_dir: args.work_dir.clone(),
        buffer_size_kb: args.buffer_size_kb,
        events: args.events.clone(),
        worker: vec![exe.display().to_string(), "lab".into(), "real-worker".into()],
    })
}

/// The hidden worker.
pub fn worker(cmd: &RealWorkerCommand) -> ExitCode {
    let result = match cmd {
        RealWorkerCommand::Hog { mib } => worker::hog(*mib).map(|()| 0),
        RealWorkerCommand::Load(args) => load_spec(args).and_then(|spec| worker::load(&spec)),
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
        Err(e) => fail(&e),
    }
}

fn load_spec(args: &RealLoadArgs) -> Result<worker::LoadSpec, String> {
    let bursts = args
        .bursts
        .as_deref()
        .map(|s| {
            let (m, p) = s.split_once(':').ok_or("--bursts MIB:PERIOD_MS")?;
            Ok::<_, String>(Bursts {
                mib: m.parse().map_err(|_| "--bursts MIB")?,
                period_ms: p.parse().map_err(|_| "--bursts PERIOD_MS")?,
            })
        })
        .transpose()?;
    Ok(worker::LoadSpec {
        build: args.build_dir.clone().map(|d| (d, args.jobs)),
        build_log: args.build_log.clone(),
        bursts,
        churn_file: args.churn_file.clone(),
        duration_s: args.duration,
    })
}
