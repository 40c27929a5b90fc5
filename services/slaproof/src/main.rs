//! The `slaproof` binary: parses the command line and hands it to the
//! library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = slaproof::cli::Cli::parse();
    match slaproof::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` prints the whole context chain on one line per cause.
            eprintln!("error: {err:#}");
            if err.downcast_ref::<slaproof::cli::Unverified>().is_some() {
                // Not a failure of the checks, and not a pass either.
                ExitCode::from(3)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
