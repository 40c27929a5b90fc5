//! RFC 9457 problem documents: every HTTP error slaproof answers, in the
//! shape every service shares (`slaproof-http`).

pub use slaproof_http::Problem;
