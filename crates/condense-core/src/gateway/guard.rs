//! Who may talk to the gateway. It forwards the client's credentials to a paid API, so anything
//! that can reach it can spend them: by default it listens on loopback only; another address
//! needs a token, sent on every request. A web page can reach loopback too — through DNS
//! rebinding (a name of its own that resolves to 127.0.0.1) or a cross-origin request — so a
//! request whose `Host` is not the gateway's own address, or that carries an `Origin` other than
//! the gateway's own, is refused.

use std::net::{IpAddr, SocketAddr};

use super::http::TOKEN_HEADER;

/// Refuses to listen on an address other than loopback without a token.
pub fn check_listen(addr: SocketAddr, token: Option<&str>) -> Result<(), String> {
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
pub enum Refusal {
    /// 403: the Host or Origin names another site.
    Forbidden(&'static str),
    /// 401: the token is missing or wrong.
    Unauthorized,
}

/// What a request must show: the gateway's bound address and its token, if any.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The address the gateway listens on.
    pub bound: SocketAddr,
    /// The token every request must carry, if set.
    pub token: Option<String>,
}

impl Guard {
    /// Checks a request's `Host`, `Origin` and token headers (`None` when absent; a value that
    /// is not text is `Some` of its bytes read lossily, which never names the gateway).
    pub fn check(
        &self,
        host: Option<&str>,
        origin: Option<&str>,
        token: Option<&[u8]>,
    ) -> Result<(), Refusal> {
        if !host.is_some_and(|h| self.own_host(h)) {
            return Err(Refusal::Forbidden("the Host header does not name this gateway"));
        }
        if let Some(origin) = origin {
            let own = origin.strip_prefix("http://").is_some_and(|authority| self.own_host(authority));
            if !own {
                return Err(Refusal::Forbidden("requests from other origins are refused"));
            }
        }
        if let Some(expected) = self.token.as_deref()
            && !same_bytes(token.unwrap_or_default(), expected.as_bytes())
        {
            return Err(Refusal::Unauthorized);
        }
        Ok(())
    }

    /// The status and message of a refusal.
    pub fn refusal(refusal: Refusal) -> (u16, String) {
        match refusal {
            Refusal::Forbidden(why) => (403, why.to_owned()),
            Refusal::Unauthorized => (401, format!("send the gateway's token in `{TOKEN_HEADER}`")),
        }
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

    /// Checks the request whose headers are `pairs`.
    fn check(g: &Guard, pairs: &[(&str, &str)]) -> Result<(), Refusal> {
        let get = |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        g.check(get("host"), get("origin"), get(TOKEN_HEADER).map(str::as_bytes))
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
            assert_eq!(check(&g, &[("host", host)]), Ok(()), "{host}");
        }
        for host in ["evil.example:4141", "127.0.0.1:80", "127.0.0.1", "localhost.evil:4141"] {
            assert!(matches!(check(&g, &[("host", host)]), Err(Refusal::Forbidden(_))), "{host}");
        }
        assert!(check(&g, &[]).is_err(), "no Host");
        let any = guard("0.0.0.0:4141", Some("t"));
        let with_token = |host| vec![("host", host), (TOKEN_HEADER, "t")];
        assert_eq!(check(&any, &with_token("192.168.1.5:4141")), Ok(()));
        assert!(check(&any, &with_token("rebound.example:4141")).is_err());
    }

    #[test]
    fn an_origin_other_than_the_gateway_is_refused() {
        let g = guard("127.0.0.1:4141", None);
        let ok = [("host", "127.0.0.1:4141"), ("origin", "http://localhost:4141")];
        assert_eq!(check(&g, &ok), Ok(()));
        for origin in ["https://evil.example", "null", "http://127.0.0.1:3000"] {
            let h = [("host", "127.0.0.1:4141"), ("origin", origin)];
            assert!(matches!(check(&g, &h), Err(Refusal::Forbidden(_))), "{origin}");
        }
    }

    #[test]
    fn the_token_is_required_when_set() {
        let g = guard("127.0.0.1:4141", Some("s3cret"));
        let host = ("host", "127.0.0.1:4141");
        assert_eq!(check(&g, &[host]), Err(Refusal::Unauthorized));
        assert_eq!(check(&g, &[host, (TOKEN_HEADER, "s3cre")]), Err(Refusal::Unauthorized));
        assert_eq!(check(&g, &[host, ("authorization", "Bearer s3cret")]), Err(Refusal::Unauthorized));
        assert_eq!(check(&g, &[host, (TOKEN_HEADER, "s3cret")]), Ok(()));
    }
}
