//! HTTP pieces every slaproof service shares, so that every error any of
//! them answers has one shape, and every connection made on a tenant's
//! behalf goes only where the operator allows.

pub mod outbound;
mod problem;

pub use problem::Problem;
