# Sourced by bench/run.sh and bench/cpu-per-request.sh: the HTTP ceiling both compare against.
#
# nginx_ceiling_conf DIR PORT writes DIR/nginx.conf: 2 workers, keep-alive without limit, no access
# log, and /healthz answering a fixed 11-byte JSON body. Start it with
# `nginx -c DIR/nginx.conf -p DIR`.
nginx_ceiling_conf() {
    local dir=$1 port=$2
    cat >"$dir/nginx.conf" <<CONF
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    server {
        listen 127.0.0.1:$port backlog=4096;
        location = /healthz { default_type application/json; return 200 '{"ok":true}'; }
    }
}
CONF
}
