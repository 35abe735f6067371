//! belay-standalone's HTTP API, proxies and auth against a running server
//! (and a real `redis-server` for the cluster modules): one test binary, so
//! it links once; one behaviour per module.

mod api_body_deadline;
mod backend_large_answers;
mod channels_api;
mod cluster;
mod cluster_channels;
mod cluster_stats;
mod common;
mod connect_proxy;
mod credential_expiry;
mod disconnect;
mod history_api;
mod history_refusals;
mod http_api;
mod https_backend;
mod jwt_info_claim;
mod jwt_required_claims;
mod jwt_time_claims;
mod presence_api;
mod proxy_expiry;
mod publish_proxy;
mod refresh_rights;
mod reserved_channels;
mod rpc_proxy;
mod stats_api;
mod subscribe_proxy;
mod subscription_tokens;
mod token_kinds;
mod user_channel_publish;
mod user_publish;
