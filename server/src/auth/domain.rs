//! Who may sign in: the checks on the claims an issuer vouched for. Pure functions.

use crate::config::AllowedDomains;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the issuer did not verify the email address")]
    Unverified,
    #[error("the email's domain is not allowed")]
    Domain,
}

/// The claims the checks read.
#[derive(Debug, Clone, Copy)]
pub struct EmailClaims<'a> {
    pub email: &'a str,
    pub email_verified: Option<bool>,
    /// Google's hosted-domain claim (Workspace accounts only).
    pub hd: Option<&'a str>,
}

/// The email's domain, lower-cased; `None` unless the address has exactly one `@` with
/// something on both sides.
pub fn email_domain(email: &str) -> Option<String> {
    let (local, domain) = email.split_once('@')?;
    if local.is_empty() || domain.is_empty() || domain.contains('@') {
        return None;
    }
    Some(domain.to_ascii_lowercase())
}

/// `email_verified` must be `true` (absent counts as unverified). With a domain list, the
/// email's domain must be on it; when `require_hd` is set, Google's `hd` must be on it too,
/// because a personal Google account can carry a company address the company does not
/// control.
pub fn check_sign_in(
    claims: EmailClaims<'_>,
    allowed: &AllowedDomains,
    require_hd: bool,
) -> Result<(), Refusal> {
    if claims.email_verified != Some(true) {
        return Err(Refusal::Unverified);
    }
    let domain = email_domain(claims.email).ok_or(Refusal::Domain)?;
    let AllowedDomains::Only(list) = allowed else {
        return Ok(());
    };
    let on_list = |d: &str| list.iter().any(|allowed| allowed.eq_ignore_ascii_case(d));
    if require_hd {
        // A Workspace account's address may be on a secondary domain; the hosted domain is
        // what proves the organisation owns the account.
        let hd = claims.hd.ok_or(Refusal::Domain)?;
        return if on_list(hd) {
            Ok(())
        } else {
            Err(Refusal::Domain)
        };
    }
    if on_list(&domain) {
        Ok(())
    } else {
        Err(Refusal::Domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(domains: &[&str]) -> AllowedDomains {
        AllowedDomains::Only(domains.iter().map(|d| d.to_string()).collect())
    }

    fn claims<'a>(email: &'a str, verified: Option<bool>, hd: Option<&'a str>) -> EmailClaims<'a> {
        EmailClaims {
            email,
            email_verified: verified,
            hd,
        }
    }

    #[test]
    fn a_verified_email_on_the_list_signs_in() {
        let allowed = only(&["example.com"]);
        assert_eq!(
            check_sign_in(claims("a@example.com", Some(true), None), &allowed, false),
            Ok(())
        );
        assert_eq!(
            check_sign_in(claims("a@EXAMPLE.com", Some(true), None), &allowed, false),
            Ok(())
        );
    }

    #[test]
    fn an_unverified_or_unstated_email_is_refused_whatever_the_domain() {
        for verified in [Some(false), None] {
            for allowed in [only(&["example.com"]), AllowedDomains::Any] {
                assert_eq!(
                    check_sign_in(claims("a@example.com", verified, None), &allowed, false),
                    Err(Refusal::Unverified)
                );
            }
        }
    }

    #[test]
    fn a_domain_off_the_list_is_refused() {
        let allowed = only(&["example.com"]);
        for email in [
            "a@other.test",
            "a@sub.example.com",
            "a@example.com.evil",
            "a@xexample.com",
        ] {
            assert_eq!(
                check_sign_in(claims(email, Some(true), None), &allowed, false),
                Err(Refusal::Domain),
                "{email}"
            );
        }
    }

    #[test]
    fn malformed_addresses_are_refused_even_when_any_domain_is_allowed() {
        for email in ["", "no-at-sign", "@example.com", "a@", "a@b@example.com"] {
            assert_eq!(
                check_sign_in(claims(email, Some(true), None), &AllowedDomains::Any, false),
                Err(Refusal::Domain),
                "{email}"
            );
        }
    }

    #[test]
    fn with_the_hosted_domain_required_a_personal_account_with_a_company_address_is_refused() {
        let allowed = only(&["corp.test"]);
        assert_eq!(
            check_sign_in(claims("frank@corp.test", Some(true), None), &allowed, true),
            Err(Refusal::Domain)
        );
        assert_eq!(
            check_sign_in(
                claims("erin@corp.test", Some(true), Some("other.test")),
                &allowed,
                true
            ),
            Err(Refusal::Domain)
        );
        assert_eq!(
            check_sign_in(
                claims("erin@corp.test", Some(true), Some("corp.test")),
                &allowed,
                true
            ),
            Ok(())
        );
    }

    #[test]
    fn a_workspace_account_on_a_secondary_domain_signs_in_by_its_hosted_domain() {
        let allowed = only(&["corp.test"]);
        assert_eq!(
            check_sign_in(
                claims("erin@corp-alias.test", Some(true), Some("corp.test")),
                &allowed,
                true
            ),
            Ok(())
        );
    }

    #[test]
    fn email_domains_are_lower_cased() {
        assert_eq!(
            email_domain("A@Example.COM").as_deref(),
            Some("example.com")
        );
        assert_eq!(email_domain("a@b@c"), None);
    }
}
