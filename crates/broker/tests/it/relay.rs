//! A TCP relay between a broker and the real name server that records the request codes the
//! broker sends: the name server still answers everything, the relay only watches.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::wire::Wire;

/// Relays every connection made to [`Relay::addr`] to `target`.
pub struct Relay {
    addr: SocketAddr,
    codes: Arc<Mutex<Vec<i32>>>,
}

impl Relay {
    pub fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let codes = Arc::new(Mutex::new(Vec::new()));
        let seen = codes.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(target) else {
                    return;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let seen = seen.clone();
                std::thread::spawn(move || {
                    forward(Wire::over(client), Wire::over(server), |f| {
                        seen.lock().unwrap().push(f)
                    })
                });
                std::thread::spawn(move || forward(Wire::over(s2), Wire::over(c2), |_| {}));
            }
        });
        Relay { addr, codes }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests with `code` went through so far.
    pub fn count(&self, code: i32) -> usize {
        self.codes
            .lock()
            .unwrap()
            .iter()
            .filter(|c| **c == code)
            .count()
    }
}

fn forward(mut from: Wire, mut to: Wire, mut on_request: impl FnMut(i32)) {
    while let Some((raw, frame)) = from.read_raw_frame() {
        if frame.flag & 1 == 0 {
            on_request(frame.code);
        }
        to.send_raw(&raw);
    }
}
