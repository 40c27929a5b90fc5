//! The command line: the `slaproof` binary to start, the memory past which
//! a server is killed, and the shapes to measure.

use std::path::PathBuf;

#[derive(Debug)]
pub(crate) struct Args {
    pub(crate) slaproof: PathBuf,
    pub(crate) kill_mib: u64,
    pub(crate) shapes: Vec<String>,
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        slaproof: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("slaproof")))
            .unwrap_or_else(|| PathBuf::from("target/release/slaproof")),
        kill_mib: 3072,
        shapes: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--slaproof" => {
                args.slaproof = PathBuf::from(it.next().ok_or("--slaproof needs a path")?);
            }
            "--kill-mib" => {
                args.kill_mib = it
                    .next()
                    .ok_or("--kill-mib needs a number")?
                    .parse()
                    .map_err(|e| format!("--kill-mib: {e}"))?;
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            shape => args.shapes.push(shape.to_owned()),
        }
    }
    Ok(args)
}
