//! The long simulation run behind `scripts/soak`: many seeds of the correct protocol (zero violations
//! expected), then every tooth over a range of seeds (each must be caught), with operations, faults by
//! kind, violations and teeth caught, ending with exactly one summary line:
//! `<ops> ops, <seeds> seeds, <violations> violations, <caught>/<teeth> teeth caught[, <n> left to their scenarios]`.
//! A tooth that a scenario of tests/driver.rs catches (tests/sim/scenarios.rs) is tried over the seeds
//! too, but when they do not catch it, it is left to that scenario: `--scenarios` prints the scenarios'
//! test names for the teeth a run tries, and `scripts/soak` runs them first.
//!
//! It reuses the test crate's simulation modules as they are; it must never judge anything itself
//! beyond counting what the checker reports.
//!
//! `cargo run --profile sim --example soak -- [--seeds N] [--from S] [--teeth-seeds M] [--jobs J] [--tooth NAME]`
//! (`--tooth` without `--seed`: only that tooth is tried)
//! `cargo run --profile sim --example soak -- --seed S [--tooth NAME]` replays one seed with its trace.
//! `cargo run --profile sim --example soak -- --scenarios [...]`: those test names, one per line.

#[path = "../tests/sim/celld.rs"]
mod celld;
#[path = "../tests/sim/checker.rs"]
mod checker;
#[path = "../tests/sim/exec.rs"]
mod exec;
#[path = "../tests/sim/scenarios.rs"]
mod scenarios;
#[path = "../tests/sim/store.rs"]
mod store;
#[path = "../tests/sim/workload.rs"]
mod workload;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use celld_edge::ownership::teeth::Tooth;

use checker::Violation;
use scenarios::scenario_of;
use workload::{run_seed, run_seed_traced, Params, Report};

struct Args {
    seeds: u64,
    from: u64,
    teeth_seeds: u64,
    jobs: u64,
    replay: Option<u64>,
    tooth: Option<Tooth>,
    scenarios: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { seeds: 10_000, from: 0, teeth_seeds: 400, jobs: 2, replay: None, tooth: None, scenarios: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{flag}: {v:?} is not a number"));
        match flag.as_str() {
            "--seeds" => a.seeds = number(value()?)?,
            "--from" => a.from = number(value()?)?,
            "--teeth-seeds" => a.teeth_seeds = number(value()?)?,
            "--jobs" => a.jobs = number(value()?)?.max(1),
            "--seed" => a.replay = Some(number(value()?)?),
            "--scenarios" => a.scenarios = true,
            "--tooth" => {
                let name = value()?;
                let t = Tooth::ALL.iter().find(|t| format!("{t:?}") == name);
                a.tooth = Some(*t.ok_or_else(|| format!("no tooth named {name:?}; one of {:?}", Tooth::ALL))?);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

/// A seed's report, with a panic inside the driver or the simulation turned into a violation.
fn guarded(seed: u64, params: &Params) -> Report {
    catch_unwind(AssertUnwindSafe(|| run_seed(seed, params))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Report {
            seed,
            nodes: 0,
            ops: 0,
            faults: BTreeMap::new(),
            violations: vec![Violation { rule: "panic", detail: what }],
            coverage: Default::default(),
        }
    })
}

/// Runs `seeds` on `jobs` threads; `each` sees every report (in no particular order).
fn run_parallel(seeds: &[u64], params: &Params, jobs: u64, each: impl Fn(Report) + Sync) {
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&seed) = seeds.get(i) else { break };
                each(guarded(seed, params));
            });
        }
    });
}

fn reproduce(seed: u64, tooth: Option<Tooth>) -> String {
    let tooth = tooth.map(|t| format!(" --tooth {t:?}")).unwrap_or_default();
    format!("scripts/soak --seed {seed}{tooth}")
}

#[derive(Default)]
struct Totals {
    ops: u64,
    seeds: u64,
    faults: BTreeMap<&'static str, u64>,
    failing: BTreeMap<u64, Vec<Violation>>,
    takeovers: u64,
    acts: u64,
    rejected: u64,
    /// Takeovers between edge and celld-like nodes, and claims that waited for a log's recovery.
    mixed: u64,
    waits: u64,
    failures: BTreeMap<&'static str, u64>,
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let teeth: Vec<Tooth> = Tooth::ALL.into_iter().filter(|t| args.tooth.is_none_or(|only| only == *t)).collect();
    if args.scenarios {
        // A replay (`--seed`) tries no tooth over seeds, so it needs no scenario either.
        if args.replay.is_none() {
            for test in teeth.iter().filter_map(|t| scenario_of(*t)) {
                println!("{test}");
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(seed) = args.replay {
        let (r, trace) = run_seed_traced(seed, &Params { tooth: args.tooth, ..Params::default() }, true);
        for line in trace {
            println!("{line}");
        }
        for v in &r.violations {
            println!("[{}] {}", v.rule, v.detail);
        }
        println!("seed {seed}: {} nodes, {} ops, {} violations", r.nodes, r.ops, r.violations.len());
        return if r.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }

    let started = std::time::Instant::now();
    let params = Params::default();
    let seeds: Vec<u64> = (args.from..args.from + args.seeds).collect();
    let totals = Mutex::new(Totals::default());
    run_parallel(&seeds, &params, args.jobs, |r| {
        let mut t = totals.lock().expect("no thread panics while holding the totals");
        t.ops += r.ops;
        t.seeds += 1;
        t.takeovers += r.coverage.takeovers;
        t.acts += r.coverage.acts;
        t.rejected += r.coverage.rejected_claims;
        t.mixed += r.coverage.mixed_takeovers;
        t.waits += r.coverage.recovery_waits;
        for (f, n) in &r.faults {
            *t.faults.entry(f.name()).or_default() += n;
        }
        for (code, n) in &r.coverage.failures {
            *t.failures.entry(code).or_default() += n;
        }
        if !r.violations.is_empty() {
            t.failing.insert(r.seed, r.violations);
        }
    });
    let t = totals.into_inner().expect("threads joined");
    let violations: usize = t.failing.values().map(Vec::len).sum();
    println!(
        "correct protocol: {} seeds ({}..{}), {} ops in {:.1?}",
        t.seeds,
        args.from,
        args.from + args.seeds,
        t.ops,
        started.elapsed()
    );
    println!("  exercised: {} takeovers, {} acting spans, {} rejected claims", t.takeovers, t.acts, t.rejected);
    println!(
        "  sharing with celld-like nodes: {} takeovers between edge and celld, {} claims waited for a log's recovery",
        t.mixed, t.waits
    );
    println!("  operations that ended in an error, by code: {:?}", t.failures);
    println!("  faults injected:");
    for (f, n) in &t.faults {
        println!("    {f:<18} {n}");
    }
    println!("  violations: {violations} in {} seeds", t.failing.len());
    for (seed, vs) in t.failing.iter().take(20) {
        println!("    seed {seed}: [{}] {}  (reproduce: {})", vs[0].rule, vs[0].detail, reproduce(*seed, None));
    }

    // Teeth: a seed catches a tooth when the armed run has violations and the same seed is clean under
    // the correct protocol (seeds outside the run above are checked here).
    let teeth_seeds: Vec<u64> = (0..args.teeth_seeds).collect();
    let clean: Vec<bool> = teeth_seeds
        .iter()
        .map(|s| match s.checked_sub(args.from).filter(|i| *i < args.seeds) {
            Some(_) => !t.failing.contains_key(s),
            None => guarded(*s, &params).violations.is_empty(),
        })
        .collect();
    let (mut caught, mut left) = (0, 0);
    println!("teeth ({} seeds each):", args.teeth_seeds);
    for &tooth in &teeth {
        let armed = Params { tooth: Some(tooth), ..Params::default() };
        let hits = Mutex::new(BTreeMap::<u64, &'static str>::new());
        run_parallel(&teeth_seeds, &armed, args.jobs, |r| {
            if let Some(v) = r.violations.first() {
                if clean[r.seed as usize] {
                    hits.lock().expect("no panics under the lock").insert(r.seed, v.rule);
                }
            }
        });
        let hits = hits.into_inner().expect("threads joined");
        let mut rules: BTreeMap<&str, u64> = BTreeMap::new();
        for rule in hits.values() {
            *rules.entry(rule).or_default() += 1;
        }
        match hits.keys().next() {
            Some(first) => {
                caught += 1;
                println!(
                    "  {tooth:?}: caught on {}/{} seeds, first at seed {first} ({}), by {rules:?}",
                    hits.len(),
                    args.teeth_seeds,
                    reproduce(*first, Some(tooth))
                );
            }
            None => match scenario_of(tooth) {
                Some(test) => {
                    left += 1;
                    println!("  {tooth:?}: not caught in {} seeds; left to its scenario, tests/driver.rs {test}", args.teeth_seeds);
                }
                None => println!("  {tooth:?}: NOT CAUGHT in {} seeds", args.teeth_seeds),
            },
        }
    }
    println!("took {:.1?}", started.elapsed());
    let judged = teeth.len() - left;
    let scenarios = if left > 0 { format!(", {left} left to their scenarios") } else { String::new() };
    println!("{} ops, {} seeds, {violations} violations, {caught}/{judged} teeth caught{scenarios}", t.ops, t.seeds);
    if violations == 0 && caught == judged {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
