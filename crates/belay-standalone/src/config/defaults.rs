//! The defaults file: every setting with its default and what it does, as
//! a TOML file that checks clean (`belay config defaults`).

use super::namespaces::NAMESPACE_KEYS;
use super::schema::{self, KEYS};

/// A config file listing every setting: the set ones with their default,
/// the optional ones commented out, each with its doc and environment
/// variable.
pub fn defaults_file() -> String {
    let mut out = String::from(
        "# Belay server configuration: every setting with its default.\n\
         # Each can also be set with an environment variable, named below\n\
         # (BELAY_SECTION_NAME); a variable wins over the file.\n",
    );
    for section in schema::sections() {
        out.push_str(&format!("\n[{section}]\n"));
        for key in KEYS.iter().filter(|k| k.section() == section) {
            out.push_str(&format!("# {} ({})\n", key.doc, key.env_var()));
            match key.default {
                Some(default) => out.push_str(&format!("{} = {default}\n", key.name())),
                None if key.secret => out.push_str(&format!("# {} = \"…\"\n", key.name())),
                None => out.push_str(&format!("# {} =\n", key.name())),
            }
        }
    }
    out.push_str(
        "\n# Per-channel settings, any number of tables; a channel takes the first\n\
         # whose pattern covers it, else the [history] bounds.\n\
         # [[namespace]]\n",
    );
    for key in NAMESPACE_KEYS {
        out.push_str(&format!(
            "# {} ({})\n# {} =\n",
            key.doc,
            "file only",
            key.name()
        ));
    }
    out
}
