//! Named proxies, created and removed at run time (behind the HTTP admin).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use belay_proto::rng::SplitMix64;

use crate::proxy::{Proxy, ProxyError};
use crate::toxic::validate_name;

/// A set of named [`Proxy`]s. Cheap to clone (clones share the set).
/// Every proxy draws from its own seed, derived from the registry's seed
/// and its name unless given, so runs are reproducible whatever the order
/// of creation.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    proxies: Arc<Mutex<BTreeMap<String, Proxy>>>,
    seed: u64,
}

impl Registry {
    /// An empty registry whose proxies derive their seeds from `seed`.
    pub fn new(seed: u64) -> Registry {
        Registry {
            proxies: Arc::default(),
            seed,
        }
    }

    /// The seed a proxy named `name` gets unless told otherwise.
    pub fn seed_for(&self, name: &str) -> u64 {
        // FNV-1a of the name, mixed with the registry's seed.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        SplitMix64::new(self.seed ^ hash).next_u64()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Proxy>> {
        self.proxies.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start a proxy named `name` from `listen` to `upstream` (both
    /// loopback), seeded with `seed` or [`Registry::seed_for`] its name.
    pub async fn create(
        &self,
        name: &str,
        listen: SocketAddr,
        upstream: SocketAddr,
        seed: Option<u64>,
    ) -> Result<Proxy, ProxyError> {
        validate_name(name).map_err(ProxyError::InvalidName)?;
        if self.lock().contains_key(name) {
            return Err(ProxyError::DuplicateProxy(name.to_owned()));
        }
        let proxy = Proxy::builder(upstream)
            .listen(listen)
            .seed(seed.unwrap_or_else(|| self.seed_for(name)))
            .start()
            .await?;
        self.insert(name, proxy.clone())
            .inspect_err(|_| proxy.close())?;
        Ok(proxy)
    }

    /// Register a proxy started elsewhere under `name`.
    pub fn insert(&self, name: &str, proxy: Proxy) -> Result<(), ProxyError> {
        validate_name(name).map_err(ProxyError::InvalidName)?;
        let mut proxies = self.lock();
        if proxies.contains_key(name) {
            return Err(ProxyError::DuplicateProxy(name.to_owned()));
        }
        proxies.insert(name.to_owned(), proxy);
        Ok(())
    }

    /// The proxy named `name`.
    pub fn get(&self, name: &str) -> Result<Proxy, ProxyError> {
        self.lock()
            .get(name)
            .cloned()
            .ok_or_else(|| ProxyError::NoSuchProxy(name.to_owned()))
    }

    /// Remove the proxy named `name` and [`close`](Proxy::close) it.
    pub fn remove(&self, name: &str) -> Result<(), ProxyError> {
        let proxy = self
            .lock()
            .remove(name)
            .ok_or_else(|| ProxyError::NoSuchProxy(name.to_owned()))?;
        proxy.close();
        Ok(())
    }

    /// Every proxy, by name.
    pub fn list(&self) -> Vec<(String, Proxy)> {
        self.lock()
            .iter()
            .map(|(name, proxy)| (name.clone(), proxy.clone()))
            .collect()
    }
}
