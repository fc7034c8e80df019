"""The prediction server of the `serving` image (Dockerfile target `serving`): adrank's serving SavedModel on the
training TensorFlow, behind Vertex AI's custom-container contract. `server` is the entrypoint; `limits` says what
one request and the server may take, `request` what a valid request is, `signature` what the model expects of each
instance, `predictor` calls the model. See docs/serving.md."""
