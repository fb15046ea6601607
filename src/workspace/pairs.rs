//! A map as a list of `[key, value]` pairs in serde: JSON objects take only string keys, and
//! the inventories key by tuples and paths (`#[serde(with = "crate::workspace::pairs")]`).

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Serialize `map` as a list of pairs.
pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
    map: &HashMap<K, V>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(map.iter())
}

/// Read a list of pairs back into a map (a repeated key: the last one).
pub fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
where
    K: Deserialize<'de> + Eq + Hash,
    V: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Ok(Vec::<(K, V)>::deserialize(d)?.into_iter().collect())
}
