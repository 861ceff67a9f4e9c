//! ACL decisions on requests from a socket: decoded frames (any code, any ext fields, the
//! signature fields included) checked by a broker's and a name server's ACL, unsigned, signed
//! by an account, and signed then altered; and `plain_acl.yml` text parsed as a server reads
//! it. Errors and refusals are fine; a panic is a bug, and so is accepting a request whose
//! signed content changed after signing or which was signed with another secret.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rocketpy_acl::{Acl, AclConfig, Server};
use rocketpy_protocol::frame;
use rocketpy_protocol::signature::{Credentials, SIGNATURE};

const FILE: &str = r#"
globalWhiteRemoteAddresses: ["10.1.1.*", "192.168.1.{1,2}", "172.16.3.10-20"]
accounts:
  - accessKey: writer-1
    secretKey: writer-secret
    defaultTopicPerm: DENY
    topicPerms: ["Orders=PUB", "Both=PUB|SUB"]
  - accessKey: reader-1
    secretKey: reader-secret
    defaultTopicPerm: SUB
    defaultGroupPerm: DENY
    groupPerms: ["readers=SUB"]
  - accessKey: ops-team
    secretKey: ops-secret
    admin: true
"#;

fn creds(ak: &str, sk: &str) -> Credentials {
    Credentials::new(ak.into(), sk.into(), None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 0x80 != 0 {
        // A plain_acl.yml from disk: parsed or refused, and a parsed one checks requests.
        if let Ok(config) = AclConfig::parse(&String::from_utf8_lossy(rest)) {
            let acl = Acl::of(config, Server::Broker);
            let _ = acl.check(
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                &rocketpy_protocol::RemotingCommand::request(10),
            );
        }
        return;
    }
    let config = AclConfig::parse(FILE).expect("the fixed file parses");
    let broker = Acl::of(config.clone(), Server::Broker);
    let namesrv = Acl::of(config, Server::Namesrv);
    let peer = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
    let mut buf = BytesMut::from(rest);
    while let Ok(Some(mut cmd)) = frame::decode(&mut buf) {
        let _ = broker.check(peer, &cmd);
        let _ = namesrv.check(peer, &cmd);
        let _ = broker.check(IpAddr::V4(Ipv4Addr::new(10, 1, 1, 7)), &cmd);
        let (ak, sk) = [
            ("writer-1", "writer-secret"),
            ("reader-1", "reader-secret"),
            ("ops-team", "ops-secret"),
        ][usize::from(mode % 3)];
        creds(ak, sk).sign(&mut cmd);
        let _ = broker.check(peer, &cmd);
        let _ = namesrv.check(peer, &cmd);
        // Signed with another secret: refused whatever else the request holds.
        let mut forged = cmd.clone();
        creds(ak, "not-the-secret").sign(&mut forged);
        assert!(broker.check(peer, &forged).is_err(), "a forged signature passed");
        // Altered after signing (the body grows): refused.
        let mut altered = cmd.clone();
        let mut body = altered.body.to_vec();
        body.push(mode);
        altered.body = body.into();
        if altered.field_opt(SIGNATURE).is_some() {
            assert!(broker.check(peer, &altered).is_err(), "an altered request passed");
        }
    }
});
