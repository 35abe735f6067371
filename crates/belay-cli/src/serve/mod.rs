//! `belay serve`: a Belay server on the embedded broker (or, with
//! `--broker redis://…`, on Redis, shared with every other node), optionally
//! with the demo application (feed channel, RPC methods, fault panel at `/`).

use std::time::Duration;

use belay_demo::Demo;
use belay_server::Server;
use belay_standalone::LogPlan;

mod demo;
mod flags;
mod logging;
mod setup;
mod signals;
mod summary;

pub(crate) use flags::Args;
use setup::Setup;

/// Run `belay serve`; `explicit` names the flags given on the command
/// line (a config file cannot be combined with them, except --demo,
/// --feed-every-ms and the benchmarking flags).
pub(crate) fn run(args: &Args, explicit: &[String]) -> Result<(), String> {
    if args.config.is_some() {
        let clashing: Vec<String> = explicit
            .iter()
            .filter(|id| {
                !matches!(
                    id.as_str(),
                    "config"
                        | "demo"
                        | "feed_every_ms"
                        | "worker_threads"
                        | "handshake_cost_us"
                        | "session_cost_us"
                )
            })
            .map(|id| format!("--{}", id.replace('_', "-")))
            .collect();
        if !clashing.is_empty() {
            return Err(format!(
                "--config holds every setting; put these in the file instead: {}",
                clashing.join(", ")
            ));
        }
    }
    let log = match &args.config {
        Some(path) => logging::plan_of_file(path)?,
        None => args.log_plan(),
    };
    logging::init(log.format);
    if args.config.is_some() {
        logging::warn_stray_variables();
    }
    let workers = args.bench.worker_threads.map(usize::from);
    let runtime = belay_standalone::runtime::build_with_workers(workers)
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(serve(args, explicit, log))
}

async fn serve(args: &Args, explicit: &[String], log: LogPlan) -> Result<(), String> {
    let mut setup = match &args.config {
        Some(path) => Setup::from_file(path).await?,
        None => Setup::from_flags(args).await?,
    };
    if args.demo && args.config.is_none() {
        demo::liveness_and_drain(&mut setup.config, explicit);
    }
    let Setup {
        listen,
        internal_listen,
        config,
        tls,
        broker,
        redis,
        auth,
        backend,
        api,
        proxy,
    } = setup;
    let demo = args.demo.then(Demo::new);
    let builder = match &demo {
        Some(demo) => demo.builder_on(config, broker),
        None => Server::builder().broker(broker).config(config),
    };
    let builder = match (backend, auth) {
        (Some(backend), _) => builder.authenticator(backend),
        (None, Some(jwt)) => builder.authenticator(jwt),
        (None, None) => builder,
    };
    // On Redis: SSE sends for another node's stream go to it.
    let builder = match &redis {
        Some(redis) => builder.sse_relay(redis.sse_relay()),
        None => builder,
    };
    // With a backend: every request is its (the demo's methods give way).
    let server = match &proxy {
        Some(proxy) => builder.methods(proxy.methods()),
        None => builder,
    }
    .build();
    if let Some(redis) = &redis {
        redis.serve_sse_relays(&server);
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let router = match &demo {
        Some(demo) => {
            belay_demo::spawn_feed(&server, Duration::from_millis(args.feed_every_ms.max(1)));
            demo.router(&server)
        }
        // With an internal listener, /metrics and the admin routes are
        // there only, off the clients' port.
        None if internal_listen.is_some() => server.client_router(),
        None => server.router().merge(server.admin_router()),
    };
    // With an API key: the HTTP server API under /api/.
    let router = match &api {
        Some((key, max_body)) => {
            let cluster = redis
                .as_ref()
                .map(|redis| belay_standalone::api::ClusterApi::new(&server, redis));
            router.merge(belay_standalone::api::router(
                &server, key, *max_body, cluster,
            ))
        }
        None => router,
    };
    // On Redis: `GET /admin/cluster`, and this node's answer to it (with
    // the other admin routes: on the internal listener when there is one).
    let cluster = redis.as_ref().map(|redis| redis.cluster_router(&server));
    let (router, cluster) = match (cluster, internal_listen) {
        (Some(cluster), None) => (router.merge(cluster), None),
        (cluster, _) => (router, cluster),
    };
    // Last, so that it covers every route: the injected CPU costs.
    let router = args.bench.cost().layer(router);
    if let Some(internal) = internal_listen {
        let listener = tokio::net::TcpListener::bind(internal)
            .await
            .map_err(|e| format!("cannot listen on {internal} (server.internal_listen): {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("no local address: {e}"))?;
        // Said before the clients' address, which tests and scripts wait for.
        eprintln!("belay internal routes (/metrics, /admin/*) on http://{local}/");
        let internal_server = server.clone();
        let routes = match cluster {
            Some(cluster) => server.internal_router().merge(cluster),
            None => server.internal_router(),
        };
        tokio::spawn(async move {
            if let Err(e) = internal_server.serve(listener, routes).await {
                tracing::error!("the internal listener failed: {e}");
            }
        });
    }
    let (http, ws) = if tls.is_some() {
        ("https", "wss")
    } else {
        ("http", "ws")
    };
    if args.demo {
        eprintln!("belay demo server: open {http}://{local}/ (WebSocket at {ws}://{local}/ws)");
    } else {
        eprintln!("belay server listening on {ws}://{local}/ws");
    }
    // SIGTERM or SIGINT drains; a second one closes what is left 1001.
    signals::drain_on_signals(server.clone())
        .map_err(|e| format!("cannot watch for signals: {e}"))?;
    if let Some(every) = log.summary_every {
        tokio::spawn(summary::every(server.clone(), every));
    }
    let served = match tls {
        Some(tls) => server.serve_tls(listener, router, tls).await,
        None => server.serve(listener, router).await,
    };
    served.map_err(|e| format!("server failed: {e}"))
}
