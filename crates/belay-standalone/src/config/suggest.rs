//! "Did you mean": the known name closest to a misspelt one.

/// The known name closest to `name` (for "did you mean"), if close.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|c| {
            // `secret` for `jwt_secret`: a whole part of the name counts as close.
            let part = c.split('_').any(|p| p == name) && name.len() >= 3;
            (if part { 1 } else { edit_distance(name, c) }, c)
        })
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(here)
            };
            previous = here;
        }
    }
    row[b.len()]
}
