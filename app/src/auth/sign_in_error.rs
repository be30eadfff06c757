/// Why a sign-in was refused. The callback redirects to `/sign-in?error=<code>`; the page
/// shows a fixed message per code, so nothing from the request is reflected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInError {
    /// No sign-in in progress in this browser, or `state` does not match it.
    State,
    /// The issuer refused or failed the code exchange (a replayed code, a wrong verifier).
    Exchange,
    /// The ID token failed verification (signature, audience, issuer, expiry).
    Token,
    /// The ID token's nonce does not match the one this sign-in sent.
    Nonce,
    /// The issuer does not vouch for the email address.
    Unverified,
    /// The email's domain (or Google's `hd`) is not on the allowed list.
    Domain,
    /// The person cancelled at the issuer, or the issuer returned an error.
    Denied,
    /// A local one-time link that was used already or never existed.
    LocalLink,
    /// The issuer could not be reached.
    Unavailable,
    /// A `?token=` that is not a live login token, or that came from another site.
    LoginToken,
}

impl SignInError {
    const ALL: [SignInError; 10] = [
        Self::State,
        Self::Exchange,
        Self::Token,
        Self::Nonce,
        Self::Unverified,
        Self::Domain,
        Self::Denied,
        Self::LocalLink,
        Self::Unavailable,
        Self::LoginToken,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Exchange => "exchange",
            Self::Token => "token",
            Self::Nonce => "nonce",
            Self::Unverified => "unverified",
            Self::Domain => "domain",
            Self::Denied => "denied",
            Self::LocalLink => "local-link",
            Self::Unavailable => "unavailable",
            Self::LoginToken => "login-token",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.code() == code)
    }

    pub fn message(self) -> &'static str {
        match self {
            Self::State => {
                "This sign-in did not start in this browser, or it expired. Start again."
            }
            Self::Exchange => "The identity provider did not accept this sign-in. Start again.",
            Self::Token => "The identity provider's answer could not be verified.",
            Self::Nonce => "The identity provider's answer does not belong to this sign-in.",
            Self::Unverified => "Your identity provider has not verified your email address.",
            Self::Domain => "Accounts from your email domain may not sign in to this console.",
            Self::Denied => "The sign-in was cancelled or refused at the identity provider.",
            Self::LocalLink => {
                "That sign-in link was used already or is not valid. Use the newest link \
                 the server printed."
            }
            Self::Unavailable => "The identity provider could not be reached. Try again shortly.",
            Self::LoginToken => {
                "That login token is not valid, has expired or was revoked, or the link came \
                 from another site."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SignInError;

    #[test]
    fn every_code_round_trips() {
        for error in SignInError::ALL {
            assert_eq!(SignInError::parse(error.code()), Some(error));
        }
        assert_eq!(SignInError::parse("<script>"), None);
    }
}
