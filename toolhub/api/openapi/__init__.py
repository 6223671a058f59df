"""What the published OpenAPI document says beyond what drf-spectacular derives.

- ``pages``: ``paginated(Item)`` and ``page_parameters()`` document a list answered
  through a paginator (``BaseAPIView.paginate`` or a cursor paginator): the envelope
  comes from the paginator's own ``get_paginated_response_schema``.
- ``errors``: ``ERROR_SCHEMA`` is the one error body (``toolhub.api.exceptions``),
  published as the ``Error`` component; ``document_errors`` (a postprocessing hook)
  gives every operation the errors any such operation can answer, and ``errors(...)``
  declares in a view's ``extend_schema`` those only some operations answer.
- ``inputs``: what a request may send, as the API reads it: choices in any letter
  case, query parameters and ids, closed request bodies and the bodies that must name
  something (its extensions are registered by ``ToolhubConfig.ready``).
- ``document``: ``SchemaView`` serves the document, honouring ``?format=json|yaml``.
"""
