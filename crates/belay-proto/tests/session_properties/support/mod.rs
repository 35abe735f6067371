//! The machinery every session property shares: the run configuration, the
//! generator of setups and op lists, and the model-light driver that checks
//! a run (see the crate doc).

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, RngSeed, TestCaseError, TestRunner};

use self::driver::Driver;

macro_rules! ensure {
    ($driver:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($driver.fail(format!($($fmt)+)));
        }
    };
}

mod calls;
mod driver;
mod inputs;
mod ops;
mod strategies;

pub(crate) use driver::Checks;
pub(crate) use ops::{Fact, Msg, Op, ReqRef, Setup, Target};
pub(crate) use strategies::{advice_ms, op, ops, setup};

/// At least 1,000 cases (more if `PROPTEST_CASES` asks for more), a fixed
/// seed and the XorShift generator unless `PROPTEST_RNG_SEED` /
/// `PROPTEST_RNG_ALGORITHM` say otherwise, and no regression files.
pub(crate) fn proptest_config() -> ProptestConfig {
    let base = ProptestConfig::default();
    let rng_seed = match base.rng_seed {
        RngSeed::Random => RngSeed::Fixed(0xBE1A_7000),
        seed => seed,
    };
    // ChaCha (the default) dominates the run time in debug builds.
    let rng_algorithm = match std::env::var_os("PROPTEST_RNG_ALGORITHM") {
        Some(_) => base.rng_algorithm,
        None => RngAlgorithm::XorShift,
    };
    ProptestConfig {
        cases: base.cases.max(1000),
        failure_persistence: None,
        rng_seed,
        rng_algorithm,
        ..base
    }
}

/// Run `test` on cases drawn from `strategy` with [`proptest_config`],
/// shrinking a failure to a minimal case. (The `proptest!` macro would let
/// `PROPTEST_CASES` lower the case count below 1,000.)
pub(crate) fn check<S>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(proptest_config());
    if let Err(error) = runner.run(&strategy, test) {
        panic!("{error}\n{runner}");
    }
}

pub(crate) fn run(setup: &Setup, ops: &[Op], checks: Checks) -> Result<Driver, TestCaseError> {
    let mut driver = Driver::new(setup, checks);
    if setup.start_at_once {
        driver.apply(&Op::Start)?;
    }
    driver.run(ops)?;
    Ok(driver)
}
