//! HTTP pieces every slaproof service shares, so that every error any of
//! them answers has one shape.

pub mod problem;

pub use problem::Problem;
