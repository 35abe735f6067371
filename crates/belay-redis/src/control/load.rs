//! What a node tells the cluster with every heartbeat (its admission rate
//! and open connections) and what it hears back (the totals over the live
//! nodes): the input of the cluster's reconnect pacing plan
//! (`Server::set_cluster_capacity`, docs/SIMULATION.md "Several nodes behind
//! a balancer").

use redis::Value;

/// One node's load, as it reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NodeLoad {
    /// Connections per second it admits; 0: it takes no part in the plan.
    pub(crate) rate: f64,
    pub(crate) open: u64,
}

/// The live nodes that report a rate, totalled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClusterLoad {
    pub(crate) nodes: u32,
    pub(crate) rate: f64,
    pub(crate) open: u64,
}

/// Where a node's load comes from and where the totals go.
pub(crate) struct LoadHooks {
    pub(crate) report: Box<dyn Fn() -> NodeLoad + Send + Sync>,
    pub(crate) heard: Box<dyn Fn(ClusterLoad) + Send + Sync>,
}

/// The most admissions per second one node's report counts for in the
/// cluster's totals: far above what one node admits (thousands per
/// second), so only a broken or lying report meets it.
pub(crate) const MAX_NODE_RATE: u64 = 1_000_000;

/// The most open connections one node's report counts for.
pub(crate) const MAX_NODE_OPEN: u64 = 100_000_000;

/// The rate as the beat script stores it (a decimal, never an exponent);
/// anything not a positive finite number is 0.
pub(crate) fn rate_arg(rate: f64) -> String {
    if rate.is_finite() && rate > 0.0 {
        format!("{rate}")
    } else {
        "0".into()
    }
}

/// The beat script's `{nodes, rate, open}`.
pub(crate) fn load_reply(value: Value) -> Option<ClusterLoad> {
    let Value::Array(items) = value else {
        return None;
    };
    let [nodes, rate, open] = items.as_slice() else {
        return None;
    };
    let number = |v: &Value| match v {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    let rate: f64 = match rate {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok()?,
        Value::SimpleString(text) => text.parse().ok()?,
        _ => return None,
    };
    if !rate.is_finite() || rate < 0.0 {
        return None;
    }
    Some(ClusterLoad {
        nodes: u32::try_from(number(nodes)?).ok()?,
        rate,
        open: number(open)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_written_as_decimals_and_nonsense_as_zero() {
        assert_eq!(rate_arg(500.0), "500");
        assert_eq!(rate_arg(0.5), "0.5");
        assert_eq!(rate_arg(1e-7), "0.0000001");
        assert_eq!(rate_arg(f64::NAN), "0");
        assert_eq!(rate_arg(-3.0), "0");
        assert_eq!(rate_arg(f64::INFINITY), "0");
    }

    #[test]
    fn reads_the_totals_and_refuses_other_shapes() {
        let reply = Value::Array(vec![
            Value::Int(2),
            Value::BulkString(b"400.5".to_vec()),
            Value::Int(1_234),
        ]);
        assert_eq!(
            load_reply(reply),
            Some(ClusterLoad {
                nodes: 2,
                rate: 400.5,
                open: 1_234
            })
        );
        assert_eq!(load_reply(Value::Int(3)), None);
        assert_eq!(
            load_reply(Value::Array(vec![
                Value::Int(-1),
                Value::BulkString(b"1".to_vec()),
                Value::Int(0)
            ])),
            None
        );
        for nonsense in [&b"x"[..], b"inf", b"NaN", b"-5"] {
            assert_eq!(
                load_reply(Value::Array(vec![
                    Value::Int(1),
                    Value::BulkString(nonsense.to_vec()),
                    Value::Int(0)
                ])),
                None,
                "{}",
                String::from_utf8_lossy(nonsense)
            );
        }
    }
}
