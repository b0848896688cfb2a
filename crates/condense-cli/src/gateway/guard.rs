//! Who may talk to the gateway. It forwards the client's credentials to a paid API, so anything
//! that can reach it can spend them: by default it listens on loopback only; another address
//! needs a token, sent on every request. A web page can reach loopback too — through DNS
//! rebinding (a name of its own that resolves to 127.0.0.1) or a cross-origin request — so a
//! request whose `Host` is not the gateway's own address, or that carries an `Origin` other than
//! the gateway's own, is refused.

use std::net::{IpAddr, SocketAddr};

use hyper::HeaderMap;
use hyper::header::{HOST, ORIGIN};

/// The header that carries the gateway's token. The client's own `Authorization` belongs to the
/// upstream and is forwarded untouched, so the token has a header of its own.
pub(crate) const TOKEN_HEADER: &str = "x-context-condenser-token";

/// Refuses to listen on an address other than loopback without a token.
pub(crate) fn check_listen(addr: SocketAddr, token: Option<&str>) -> Result<(), String> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {addr} without --token: anyone who can reach that address could spend \
         the API keys your agents send through the gateway. Listen on 127.0.0.1, or pass --token T and \
         send the header `{TOKEN_HEADER}: T` with every request"
    ))
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 403: the Host or Origin names another site.
    Forbidden(&'static str),
    /// 401: the token is missing or wrong.
    Unauthorized,
}

/// What a request must show: the gateway's bound address and its token, if any.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub(crate) bound: SocketAddr,
    pub(crate) token: Option<String>,
}

impl Guard {
    /// Checks a request's headers.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers.get(HOST).and_then(|h| h.to_str().ok());
        if !host.is_some_and(|h| self.own_host(h)) {
            return Err(Refusal::Forbidden("the Host header does not name this gateway"));
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let own = origin
                .to_str()
                .ok()
                .and_then(|o| o.strip_prefix("http://"))
                .is_some_and(|authority| self.own_host(authority));
            if !own {
                return Err(Refusal::Forbidden("requests from other origins are refused"));
            }
        }
        if let Some(token) = self.token.as_deref() {
            let sent = headers.get(TOKEN_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
            if !same_bytes(sent, token.as_bytes()) {
                return Err(Refusal::Unauthorized);
            }
        }
        Ok(())
    }

    /// Whether `authority` (`host:port`) names this gateway: its own address, `localhost`, or a
    /// loopback address, on its port. Listening on every address (`0.0.0.0`), any address
    /// literal is its own: a rebinding attack needs a name, never a literal.
    fn own_host(&self, authority: &str) -> bool {
        let Some((host, port)) = authority.rsplit_once(':') else { return false };
        if port.parse::<u16>().ok() != Some(self.bound.port()) {
            return false;
        }
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if host.eq_ignore_ascii_case("localhost") {
            return true;
        }
        match host.parse::<IpAddr>() {
            Ok(ip) => ip == self.bound.ip() || ip.is_loopback() || self.bound.ip().is_unspecified(),
            Err(_) => false,
        }
    }
}

/// Compares a sent token with the expected one in time that depends on the lengths only, so
/// that the time of a refusal tells nothing about how much of the token was right.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(addr: &str, token: Option<&str>) -> Guard {
        Guard { bound: addr.parse().unwrap(), token: token.map(str::to_owned) }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn only_loopback_listens_without_a_token() {
        assert!(check_listen("127.0.0.1:4141".parse().unwrap(), None).is_ok());
        assert!(check_listen("[::1]:4141".parse().unwrap(), None).is_ok());
        let refused = check_listen("0.0.0.0:4141".parse().unwrap(), None).unwrap_err();
        assert!(refused.contains("--token"), "{refused}");
        assert!(check_listen("0.0.0.0:4141".parse().unwrap(), Some("")).is_err());
        assert!(check_listen("192.168.1.5:4141".parse().unwrap(), Some("t")).is_ok());
    }

    #[test]
    fn the_host_must_name_the_gateway() {
        let g = guard("127.0.0.1:4141", None);
        for host in ["127.0.0.1:4141", "localhost:4141", "LOCALHOST:4141", "[::1]:4141"] {
            assert_eq!(g.check(&headers(&[("host", host)])), Ok(()), "{host}");
        }
        for host in ["evil.example:4141", "127.0.0.1:80", "127.0.0.1", "localhost.evil:4141"] {
            assert!(matches!(g.check(&headers(&[("host", host)])), Err(Refusal::Forbidden(_))), "{host}");
        }
        assert!(g.check(&HeaderMap::new()).is_err(), "no Host");
        let any = guard("0.0.0.0:4141", Some("t"));
        let with_token = |host| headers(&[("host", host), (TOKEN_HEADER, "t")]);
        assert_eq!(any.check(&with_token("192.168.1.5:4141")), Ok(()));
        assert!(any.check(&with_token("rebound.example:4141")).is_err());
    }

    #[test]
    fn an_origin_other_than_the_gateway_is_refused() {
        let g = guard("127.0.0.1:4141", None);
        let ok = headers(&[("host", "127.0.0.1:4141"), ("origin", "http://localhost:4141")]);
        assert_eq!(g.check(&ok), Ok(()));
        for origin in ["https://evil.example", "null", "http://127.0.0.1:3000"] {
            let h = headers(&[("host", "127.0.0.1:4141"), ("origin", origin)]);
            assert!(matches!(g.check(&h), Err(Refusal::Forbidden(_))), "{origin}");
        }
    }

    #[test]
    fn the_token_is_required_when_set() {
        let g = guard("127.0.0.1:4141", Some("s3cret"));
        let host = ("host", "127.0.0.1:4141");
        assert_eq!(g.check(&headers(&[host])), Err(Refusal::Unauthorized));
        assert_eq!(g.check(&headers(&[host, (TOKEN_HEADER, "s3cre")])), Err(Refusal::Unauthorized));
        assert_eq!(
            g.check(&headers(&[host, ("authorization", "Bearer s3cret")])),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(g.check(&headers(&[host, (TOKEN_HEADER, "s3cret")])), Ok(()));
    }
}
