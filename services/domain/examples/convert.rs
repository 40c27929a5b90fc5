//! Reads an SLA document (native or OpenSLO) from a file and prints it in both formats, or the problems found.
//!
//! `cargo run -p slaproof-domain --example convert -- services/domain/fixtures/demo-sla.yaml`

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: convert FILE");
        return std::process::ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match slaproof_domain::SlaDefinition::from_document(&text) {
        Ok(sla) => {
            println!("# native\n{}", sla.to_native_yaml());
            println!("# OpenSLO\n{}", sla.to_openslo_yaml());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: invalid SLA:\n{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
