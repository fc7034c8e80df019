"""Vertex AI operations behind `adrank submit|schedule|runs --backend vertex`: the real aiplatform client."""
