//! Prints the sender state of every flow of a scenario JSON after running it (debugging aid).
fn main() {
    let path = std::env::args().nth(1).expect("scenario JSON path");
    let until: u64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
    let json = std::fs::read_to_string(path).unwrap();
    let mut sim = ccgym_sim::Simulation::from_json(&json, std::path::Path::new(".")).unwrap();
    sim.run_until(until);
    for (i, f) in sim.flows().iter().enumerate() {
        println!(
            "flow {i} {}->{} sched {:?} una {} nxt {} app {} rate {:.3e} win {} next_avail {:.0} now {} timer {:?}",
            f.path.src,
            f.path.dst,
            f.snd.sched,
            f.ctl.snd_una,
            f.ctl.snd_nxt,
            f.ctl.app_limit,
            f.ctl.rate,
            f.ctl.window,
            f.snd.next_avail,
            sim.now(),
            f.ctl.timer
        );
    }
    for (h, host) in sim.hosts().iter().enumerate() {
        println!(
            "host {h}: ready {:?} sleeping {} current {:?} wake {} paused {}",
            host.ready,
            host.sleeping.len(),
            host.current,
            host.wake_at,
            sim.ports()[host.port as usize].paused
        );
    }
}
