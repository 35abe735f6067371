//! Stop waits until every task of the host has ended, and a sleeping host
//! runs nothing but its loop: checked with the task count of a runtime of
//! the host's own (a current-thread runtime on a thread of its own, so a
//! finished task is released before anything else runs there).

use serde_json::json;
use tokio::sync::mpsc;

use crate::relay::{host, relay, timing, until};

#[tokio::test]
async fn a_sleeping_host_runs_only_its_loop_and_stop_leaves_no_task() {
    let (_server, url, _base) = relay().await;
    let (counts, mut counted) = mpsc::unbounded_channel();
    let (answered, stop_now) = tokio::sync::oneshot::channel::<()>();
    let host_url = url.clone();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let tasks = || runtime.metrics().num_alive_tasks();
        runtime.block_on(async {
            let pc = host(&host_url, "pc-t");
            until(&pc, |s| s.stats.beats >= 2 && !s.awake).await;
            counts.send(("asleep", tasks())).unwrap();
            until(&pc, |s| s.awake).await;
            // Stopped while awake, once the call was answered.
            stop_now.await.expect("the call was answered");
            counts.send(("awake", tasks())).unwrap();
            pc.stop().await;
            counts.send(("stopped", tasks())).unwrap();
        });
    });
    assert_eq!(
        counted.recv().await,
        Some(("asleep", 1)),
        "asleep: the loop task alone"
    );
    let client = belay_client::Client::builder(url)
        .host_timing(&timing())
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    client
        .call_host("pc-t", "echo", json!(1))
        .await
        .expect("answered");
    answered.send(()).unwrap();
    let (_, awake) = counted.recv().await.expect("awake");
    assert!(
        awake >= 3,
        "awake: loop, session, client driver, transport ({awake})"
    );
    assert_eq!(
        counted.recv().await,
        Some(("stopped", 0)),
        "stop returned: no task of the host is left"
    );
    thread.join().expect("the host thread");
    client.close().await;
}
