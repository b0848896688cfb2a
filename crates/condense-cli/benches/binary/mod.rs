//! `condense gateway` as a child process for the benchmarks that measure it through HTTP
//! (`gateway`, `abuse`): on 127.0.0.1:0, its state in a folder of its own.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `condense gateway` on a free port, pointed at `upstream`; killed, and its state folder
/// removed, when dropped.
pub(crate) struct Binary {
    pub(crate) child: Child,
    pub(crate) port: u16,
    /// Its state folder.
    pub(crate) state: std::path::PathBuf,
}

impl Binary {
    /// Starts it with `args` after the address, the state folder (named by `name`) and the
    /// Anthropic upstream.
    pub(crate) fn start(name: &str, upstream: u16, args: &[&str]) -> Binary {
        let state = std::env::temp_dir().join(format!("condense-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        let mut child = Command::new(env!("CARGO_BIN_EXE_condense"))
            .args(["gateway", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            .args(["--anthropic-upstream", &format!("http://127.0.0.1:{upstream}")])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let port = first.trim().rsplit(':').next().and_then(|p| p.parse().ok()).expect("the gateway started");
        // The banner's other lines are read and dropped, so a full pipe never blocks it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        Binary { child, port, state }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.state);
    }
}
