//! The request batching of `rocketpy_client::batch` against a real server on loopback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocketpy_client::{Accumulator, AddError, Added, BatchSettings, BatchSink};
use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{
    ClientConfig, ProcessorTable, RemotingClient, RemotingServer, Reply, ServerConfig,
};

const BATCH: i32 = 1100;

/// What the server saw: items per lane in arrival order, and the most requests of one lane
/// it held at once.
#[derive(Default)]
struct Seen {
    items: HashMap<String, Vec<u32>>,
    in_flight: HashMap<String, usize>,
    most_in_flight: usize,
    requests: usize,
}

/// A server that answers BATCH after `hold`, recording what it got.
async fn server(hold: Duration) -> (RemotingServer, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut table = ProcessorTable::new();
    let s = seen.clone();
    table.register(
        BATCH,
        Arc::new(move |_: &Arc<_>, req: &RemotingCommand| {
            let lane = req.field("lane").unwrap_or_default().to_owned();
            {
                let mut seen = s.lock().unwrap();
                seen.requests += 1;
                let items = req
                    .body
                    .chunks(4)
                    .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                seen.items.entry(lane.clone()).or_default().extend(items);
                let n = seen.in_flight.entry(lane.clone()).or_default();
                *n += 1;
                let n = *n;
                seen.most_in_flight = seen.most_in_flight.max(n);
            }
            let resp = RemotingCommand::response_to(req, response::SUCCESS);
            let s = s.clone();
            Ok(Reply::Later(Box::pin(async move {
                tokio::time::sleep(hold).await;
                *s.lock().unwrap().in_flight.get_mut(&lane).unwrap() -= 1;
                Some(resp)
            })))
        }),
    );
    let server = RemotingServer::bind("127.0.0.1:0", table, ServerConfig::default())
        .await
        .unwrap();
    (server, seen)
}

/// Outcomes as the sink got them: (lane, items, ok).
type Outcomes = Arc<Mutex<Vec<(String, Vec<u32>, bool)>>>;

struct Sink {
    addr: String,
    outcomes: Outcomes,
}

impl BatchSink<String, u32> for Sink {
    fn request(&self, lane: &String, body: Vec<u8>, count: usize) -> (String, RemotingCommand) {
        assert_eq!(body.len(), count * 4);
        let cmd = RemotingCommand::request(BATCH)
            .with_field("lane", lane)
            .with_body(body);
        (self.addr.clone(), cmd)
    }

    fn done(
        &self,
        lane: &String,
        items: Vec<u32>,
        _elapsed: Duration,
        result: rocketpy_remoting::Result<RemotingCommand>,
    ) {
        let ok = matches!(result, Ok(ref r) if r.code == response::SUCCESS);
        self.outcomes
            .lock()
            .unwrap()
            .push((lane.clone(), items, ok));
    }
}

fn accumulator(addr: &str, settings: BatchSettings) -> (Accumulator<String, u32>, Outcomes) {
    let outcomes = Outcomes::default();
    let client = RemotingClient::new(
        ClientConfig::default(),
        None,
        tokio::runtime::Handle::current(),
    );
    let sink = Arc::new(Sink {
        addr: addr.to_owned(),
        outcomes: outcomes.clone(),
    });
    let acc = Accumulator::new(settings, client, tokio::runtime::Handle::current(), sink);
    (acc, outcomes)
}

fn settings() -> BatchSettings {
    BatchSettings {
        max_bytes: 1 << 20,
        max_delay: Duration::ZERO,
        total_max_bytes: 1 << 30,
        timeout: Duration::from_secs(5),
    }
}

fn add(acc: &Accumulator<String, u32>, lane: &str, item: u32) -> Result<Added, AddError> {
    acc.add(
        &lane.to_owned(),
        4,
        |out| out.extend_from_slice(&item.to_be_bytes()),
        item,
    )
    .map_err(|(e, back)| {
        assert_eq!(back, item, "a refused item comes back");
        e
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lanes_keep_their_order_with_one_request_in_flight_each() {
    let (server, seen) = server(Duration::from_millis(5)).await;
    let (acc, outcomes) = accumulator(&server.local_addr().to_string(), settings());
    let lanes = ["a", "b", "c"];
    let a = acc.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..3000u32 {
            add(&a, lanes[i as usize % 3], i).unwrap();
            if i % 100 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert!(a.flush(Duration::from_secs(10)), "everything answered");
    })
    .await
    .unwrap();
    assert_eq!(acc.held(), 0);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.most_in_flight, 1, "one request per lane at a time");
        assert!(
            seen.requests < 3000 / 4,
            "items gathered while requests were in flight ({} requests)",
            seen.requests
        );
        let outcomes = outcomes.lock().unwrap();
        for (n, lane) in lanes.iter().enumerate() {
            let expected: Vec<u32> = (0..3000u32).filter(|i| *i as usize % 3 == n).collect();
            assert_eq!(
                seen.items[*lane], expected,
                "the server got lane {lane} in order"
            );
            let answered: Vec<u32> = outcomes
                .iter()
                .filter(|(l, _, _)| l == lane)
                .flat_map(|(_, items, ok)| {
                    assert!(ok);
                    items.clone()
                })
                .collect();
            assert_eq!(
                answered, expected,
                "answers came back in order for lane {lane}"
            );
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_stay_under_max_bytes_and_a_lone_item_waits_max_delay() {
    let (server, seen) = server(Duration::from_millis(20)).await;
    let addr = server.local_addr().to_string();
    let (acc, outcomes) = accumulator(
        &addr,
        BatchSettings {
            max_bytes: 40,
            ..settings()
        },
    );
    let a = acc.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..500 {
            add(&a, "x", i).unwrap();
        }
        assert!(a.flush(Duration::from_secs(10)));
    })
    .await
    .unwrap();
    for (_, items, _) in outcomes.lock().unwrap().iter() {
        assert!(items.len() <= 10, "a request of {} items", items.len());
    }
    assert_eq!(
        seen.lock().unwrap().items["x"],
        (0..500).collect::<Vec<_>>()
    );

    // With a delay, items added together to an idle lane leave as one request.
    let (acc, outcomes) = accumulator(
        &addr,
        BatchSettings {
            max_delay: Duration::from_millis(200),
            ..settings()
        },
    );
    let a = acc.clone();
    let started = Instant::now();
    tokio::task::spawn_blocking(move || {
        for i in 0..10 {
            add(&a, "y", i).unwrap();
        }
    })
    .await
    .unwrap();
    while outcomes.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(outcomes.lock().unwrap()[0].1, (0..10).collect::<Vec<_>>());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_accumulator_refuses_until_answers_free_space() {
    // Answers take 300 ms: the allowance of 4 items fills at once.
    let (server, _seen) = server(Duration::from_millis(300)).await;
    let (acc, outcomes) = accumulator(
        &server.local_addr().to_string(),
        BatchSettings {
            total_max_bytes: 16,
            ..settings()
        },
    );
    let a = acc.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..4 {
            add(&a, "z", i).unwrap();
        }
        assert_eq!(add(&a, "z", 4), Err(AddError::Full));
        assert!(
            !a.wait_for_space(4, Duration::from_millis(50)),
            "still full"
        );
        assert!(
            a.wait_for_space(4, Duration::from_secs(5)),
            "space after the answers"
        );
        add(&a, "z", 4).unwrap();
        a.close();
        assert_eq!(add(&a, "z", 5), Err(AddError::Closed));
        assert!(a.flush(Duration::from_secs(5)), "what was held still goes");
    })
    .await
    .unwrap();
    let answered: Vec<u32> = outcomes
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(_, items, _)| items.clone())
        .collect();
    assert_eq!(answered, vec![0, 1, 2, 3, 4]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_request_reports_each_of_its_items() {
    // Nothing listens there: the connection is refused.
    let (acc, outcomes) = accumulator(
        "127.0.0.1:1",
        BatchSettings {
            timeout: Duration::from_millis(500),
            ..settings()
        },
    );
    let a = acc.clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..20 {
            add(&a, "f", i).unwrap();
        }
        assert!(a.flush(Duration::from_secs(5)));
    })
    .await
    .unwrap();
    let outcomes = outcomes.lock().unwrap();
    assert!(outcomes.iter().all(|(_, _, ok)| !ok));
    let items: Vec<u32> = outcomes.iter().flat_map(|(_, i, _)| i.clone()).collect();
    assert_eq!(items, (0..20).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_tells_which_batch_an_item_joined_and_when_it_left() {
    let (server, _seen) = server(Duration::from_millis(200)).await;
    let (acc, _outcomes) = accumulator(&server.local_addr().to_string(), settings());
    let a = acc.clone();
    tokio::task::spawn_blocking(move || {
        let lane = "a".to_owned();
        let first = add(&a, "a", 1).unwrap();
        assert!(first.sent_alone, "an idle lane sends at once");
        assert_eq!(a.gathering(&lane), None);
        let second = add(&a, "a", 2).unwrap();
        let third = add(&a, "a", 3).unwrap();
        assert!(!second.sent_alone && !third.sent_alone);
        assert_eq!(
            second.batch, third.batch,
            "both wait behind the first request"
        );
        assert_ne!(second.batch, first.batch);
        assert_eq!(a.gathering(&lane), Some(second.batch));
        // The first answer comes back; the gathered batch leaves.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while a.gathering(&lane) == Some(second.batch) {
            assert!(std::time::Instant::now() < deadline, "the batch never left");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(a.flush(Duration::from_secs(5)));
    })
    .await
    .unwrap();
    server.shutdown().await;
}
