//! The host's Belay session while it is awake: a [`Client`] holding
//! `$host-calls:ID`, each call run by the host's method in a task of its
//! own and answered with `$answer`.
//!
//! [`Awake::stop`] closes the client (which waits for its own tasks) and
//! then waits for every call task, so a sleeping host holds no task of its
//! session.

use std::sync::{Arc, Mutex};

use belay_proto::host::CALLS_CHANNEL_PREFIX;
use belay_proto::message::{AnswerOutcome, AnswerParams, ErrorBody, HostCallDelivery, RawJson};
use belay_proto::server::ANSWER_METHOD;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use super::{HostError, Methods};
use crate::{reserved_params, Client, ClientBuilder, Item, RequestOptions};

/// The session of an awake host.
pub(crate) struct Awake {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Awake {
    /// Start the session of host `id`; `current` holds its client while it
    /// runs (for [`super::Host::publish`]).
    pub(crate) fn start(
        builder: ClientBuilder,
        id: String,
        methods: Methods,
        current: Arc<Mutex<Option<Client>>>,
    ) -> Awake {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(serve(builder, id, methods, current, stopped));
        Awake {
            stop: Some(stop),
            task,
        }
    }

    /// Whether the session ended on its own (its client stopped).
    pub(crate) fn has_ended(&self) -> bool {
        self.task.is_finished()
    }

    /// Stop the session; returns once every task of it has ended.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

async fn serve(
    builder: ClientBuilder,
    id: String,
    methods: Methods,
    current: Arc<Mutex<Option<Client>>>,
    mut stopped: oneshot::Receiver<()>,
) {
    // An unusable URL: the host loop's heartbeat, on the same URL, says so.
    let Ok(client) = builder.connect() else {
        return;
    };
    *lock(&current) = Some(client.clone());
    let mut calls = JoinSet::new();
    if id.is_empty() {
        // A relay that never named the host (one from before idle sleep)
        // has no calls channel for it: hold the session as it expects.
        let _ = stopped.await;
    } else if let Ok(mut inbox) = client
        .subscribe(&format!("{CALLS_CHANNEL_PREFIX}{id}"))
        .await
    {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                item = inbox.next() => match item {
                    Some(Item::Publication(p)) => {
                        let (client, methods) = (client.clone(), methods.clone());
                        calls.spawn(async move { run_call(&client, &methods, p.data).await });
                    }
                    Some(Item::Resync) => {}
                    // Refused, or the client stopped: the session is over.
                    _ => break,
                },
                Some(_) = calls.join_next(), if !calls.is_empty() => {}
            }
        }
    }
    *lock(&current) = None;
    client.close().await;
    // Calls still running answer into a closed client; wait for them all.
    calls.shutdown().await;
}

/// Run one call (a [`HostCallDelivery`]: `{"call": N, "method": ...,
/// "params": ...}`) and answer it. A delivery without a call id has
/// nothing to answer and is dropped.
async fn run_call(client: &Client, methods: &Methods, call: RawJson) {
    let Ok(call) = call.parse::<HostCallDelivery>() else {
        return;
    };
    let id = call.call;
    let method = call.method.as_str();
    let outcome = match methods.get(method) {
        Some(handler) => handler(call.params).await,
        None => Err(HostError::new(
            "unknown_method",
            format!("this host has no method {method:?}"),
        )),
    };
    let outcome = match outcome {
        Ok(result) => AnswerOutcome::Result(result),
        Err(error) => AnswerOutcome::Error(ErrorBody::new(error.code, error.message)),
    };
    let answer = reserved_params(&AnswerParams::new(id, outcome));
    if let Err(e) = client
        .request_with(ANSWER_METHOD, answer, RequestOptions::default())
        .await
    {
        tracing::debug!(call = id, error = %e, "answer not delivered");
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
