//! Slow replies and service down as a method layer.

use std::sync::Arc;

use belay_server::rpc::Methods;

use super::{lock, FaultBench};

impl FaultBench {
    /// Add the layer that applies slow replies and service down to every
    /// call of `methods`: slow replies wait before the method runs; while
    /// the service is down a call is held unanswered, as a hung backend
    /// holds it, and the client's deadline settles it. A call without an
    /// idempotency key is never answered; a keyed one runs once the service
    /// is back, so the key is not held forever and the client's retry gets
    /// the one outcome.
    pub fn layer_methods(&self, methods: &mut Methods) {
        let bench = Arc::clone(&self.bench);
        methods.layer(move |_method, ctx, params, next| {
            let (down, delay) = {
                let faults = lock(&bench.faults);
                (faults.service_down, faults.slow_replies)
            };
            let mut back = bench.service_down.subscribe();
            async move {
                if down {
                    if ctx.idempotency_key.is_none() {
                        std::future::pending::<()>().await;
                    }
                    // The bench outlives every call (the server holds it).
                    let _ = back.wait_for(|down| !down).await;
                }
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                next.run(ctx, params).await
            }
        });
    }
}
