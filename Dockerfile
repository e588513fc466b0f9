# draplan serve: docker build -t draplan:0.1.0 .  (README: draplan serve)
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.12-slim
COPY --from=build /install /usr/local
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin draplan
USER 10001:10001
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 MPLCONFIGDIR=/tmp
EXPOSE 8080
ENTRYPOINT ["draplan", "serve"]
CMD ["--listen=0.0.0.0:8080"]
