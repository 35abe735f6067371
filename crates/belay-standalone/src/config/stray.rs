//! `BELAY_*` environment variables that no setting reads: a misspelt
//! override (`BELAY_AUTH_JWT_SECERT`) would otherwise leave its setting at
//! the file's value without a word. Belay's own test and benchmark tools
//! read a few `BELAY_*` variables of their own (`BELAY_BIN`, …), so a
//! stray variable is a warning that names the setting it is closest to,
//! not an error.

use super::schema::KEYS;
use super::suggest::closest;

/// A `BELAY_*` variable no setting reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StrayVariable {
    /// Its name.
    pub name: String,
    /// The setting's variable it is probably a misspelling of.
    pub near: Option<String>,
}

impl std::fmt::Display for StrayVariable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.near {
            Some(near) => write!(
                f,
                "environment {} matches no setting (did you mean {near}?); ignored",
                self.name
            ),
            None => write!(f, "environment {} matches no setting; ignored", self.name),
        }
    }
}

/// The `BELAY_*` names among `names` that no setting reads, in order.
pub fn stray_variables(names: impl IntoIterator<Item = String>) -> Vec<StrayVariable> {
    let known: Vec<String> = KEYS.iter().map(|key| key.env_var()).collect();
    names
        .into_iter()
        .filter(|name| name.starts_with("BELAY_") && !known.contains(name))
        .map(|name| {
            let near = closest(&name, known.iter().map(String::as_str)).map(str::to_owned);
            StrayVariable { name, near }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_override_is_named_with_the_setting_it_is_near() {
        let stray = stray_variables([
            "BELAY_AUTH_JWT_SECERT".to_owned(),
            "BELAY_API_KEY".to_owned(),
            "PATH".to_owned(),
            "BELAY_BIN".to_owned(),
        ]);
        assert_eq!(
            stray,
            [
                StrayVariable {
                    name: "BELAY_AUTH_JWT_SECERT".into(),
                    near: Some("BELAY_AUTH_JWT_SECRET".into()),
                },
                StrayVariable {
                    name: "BELAY_BIN".into(),
                    near: None,
                },
            ]
        );
        assert_eq!(
            stray[0].to_string(),
            "environment BELAY_AUTH_JWT_SECERT matches no setting (did you mean BELAY_AUTH_JWT_SECRET?); ignored"
        );
    }
}
