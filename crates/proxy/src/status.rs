//! `Status` of the 5.x protocol: its codes, and how the remoting answers of brokers map to
//! them (RocketMQ proxy's `ResponseBuilder`).

use rocketpy_protocol::code::response;

use crate::pb::{Code, Status};

/// A status with `code` and `message`.
pub fn status(code: Code, message: impl Into<String>) -> Status {
    Status {
        code: code as i32,
        message: message.into(),
    }
}

/// OK.
pub fn ok() -> Status {
    status(Code::Ok, "OK")
}

/// An error the proxy answers with: a code of the 5.x protocol and what went wrong.
#[derive(Debug, Clone)]
pub struct ProxyError {
    /// The status code.
    pub code: Code,
    /// The message.
    pub message: String,
}

impl ProxyError {
    /// `code` with `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ProxyError {
            code,
            message: message.into(),
        }
    }

    /// As a `Status`.
    pub fn status(&self) -> Status {
        status(self.code, self.message.clone())
    }

    /// A remoting answer that is not SUCCESS, mapped to the protocol's code.
    pub fn from_remoting(code: i32, remark: Option<&str>) -> Self {
        ProxyError::new(
            remoting_code(code),
            remark.unwrap_or("the broker refused the request"),
        )
    }
}

impl From<rocketpy_remoting::RemotingError> for ProxyError {
    fn from(e: rocketpy_remoting::RemotingError) -> Self {
        match e {
            rocketpy_remoting::RemotingError::Timeout { .. } => {
                ProxyError::new(Code::ProxyTimeout, e.to_string())
            }
            _ => ProxyError::new(Code::InternalServerError, e.to_string()),
        }
    }
}

/// The protocol code of a remoting response code.
pub fn remoting_code(code: i32) -> Code {
    match code {
        response::SUCCESS => Code::Ok,
        response::SYSTEM_BUSY => Code::TooManyRequests,
        response::REQUEST_CODE_NOT_SUPPORTED => Code::NotImplemented,
        response::FLUSH_DISK_TIMEOUT => Code::MasterPersistenceTimeout,
        response::FLUSH_SLAVE_TIMEOUT => Code::SlavePersistenceTimeout,
        response::SLAVE_NOT_AVAILABLE => Code::HaNotAvailable,
        response::TOPIC_NOT_EXIST => Code::TopicNotFound,
        response::SUBSCRIPTION_GROUP_NOT_EXIST => Code::ConsumerGroupNotFound,
        response::NO_PERMISSION => Code::Forbidden,
        response::MESSAGE_ILLEGAL | response::INVALID_PARAMETER => Code::BadRequest,
        response::POLLING_FULL => Code::TooManyRequests,
        // A filter expression the broker could not compile (its remark says where).
        response::SUBSCRIPTION_PARSE_FAILED => Code::IllegalFilterExpression,
        _ => Code::InternalServerError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_codes_map_as_rocketmq_proxy_maps_them() {
        assert_eq!(remoting_code(0), Code::Ok);
        assert_eq!(remoting_code(2), Code::TooManyRequests);
        assert_eq!(remoting_code(17), Code::TopicNotFound);
        assert_eq!(remoting_code(10), Code::MasterPersistenceTimeout);
        assert_eq!(remoting_code(1), Code::InternalServerError);
        assert_eq!(ok().code, 20000);
    }
}
