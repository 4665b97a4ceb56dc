// Written by .ci/openapi-document.sh from openapi.json; do not edit.
// swift-format-ignore-file

/// The read API's OpenAPI document, served at /api/v1/openapi.json.
enum OpenAPIDocument {
    /// SHA-256 of openapi.json when this file was written.
    static let sha256 = "81ff9169613fb7d5f60045f0ba48922c4ee90f6beb03aa96a3beb9da8c036e44"
    static let json = """
{
  "openapi": "3.1.0",
  "info": {
    "title": "vlogger read API",
    "version": "1.0.0",
    "description": "What a vlogger gateway knows, read over HTTP: the tags in each reader's field with their last reading, one tag, and the stored readings and events with cursor paging. Rows have the same JSON as the live stream, the MQTT output and the webhooks (the export's names and formats, plus key and table). Open to clients of a loopback listener; on a network address a request needs the read token ([service] read-token-file) as a bearer token. docs/api.md has examples."
  },
  "servers": [
    {
      "url": "/api/v1"
    }
  ],
  "paths": {
    "/tags": {
      "get": {
        "operationId": "listTagsInField",
        "summary": "The tags in each reader's field now, with their last reading",
        "responses": {
          "200": {
            "description": "Each configured reader, whether it works, and the tags its last cycle found",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Field"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/tags/{uid}": {
      "get": {
        "operationId": "getTag",
        "summary": "One tag: what the store knows of it, its asset, its last reading",
        "parameters": [
          {
            "name": "uid",
            "in": "path",
            "required": true,
            "description": "The tag's UID, 16 hex digits, most-significant byte (E0) first",
            "schema": {
              "type": "string",
              "pattern": "^[Ee]0[0-9A-Fa-f]{14}$"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The tag",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Tag"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "404": {
            "description": "The store has never seen this tag",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/readings": {
      "get": {
        "operationId": "listReadings",
        "summary": "Stored readings in commit order, a page at a time",
        "parameters": [
          {
            "$ref": "#/components/parameters/uid"
          },
          {
            "$ref": "#/components/parameters/reader"
          },
          {
            "$ref": "#/components/parameters/since"
          },
          {
            "$ref": "#/components/parameters/until"
          },
          {
            "$ref": "#/components/parameters/after_id"
          },
          {
            "$ref": "#/components/parameters/limit"
          }
        ],
        "responses": {
          "200": {
            "description": "A page of readings",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReadingPage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/events": {
      "get": {
        "operationId": "listEvents",
        "summary": "Stored events in commit order, a page at a time",
        "parameters": [
          {
            "$ref": "#/components/parameters/uid"
          },
          {
            "$ref": "#/components/parameters/reader"
          },
          {
            "name": "kind",
            "in": "query",
            "required": false,
            "description": "Only events of this kind",
            "schema": {
              "type": "string",
              "enum": [
                "start",
                "stop",
                "arrival",
                "departure",
                "violation",
                "violation_ended",
                "error",
                "write_done",
                "write_failed",
                "write_expired",
                "audit_finished",
                "reader_down",
                "reader_up",
                "access",
                "acknowledged"
              ]
            }
          },
          {
            "$ref": "#/components/parameters/since"
          },
          {
            "$ref": "#/components/parameters/until"
          },
          {
            "$ref": "#/components/parameters/after_id"
          },
          {
            "$ref": "#/components/parameters/limit"
          }
        ],
        "responses": {
          "200": {
            "description": "A page of events",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/EventPage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/fields": {
      "get": {
        "operationId": "listFields",
        "summary": "The decoded fields the store knows, with their units",
        "description": "Rows carry a decoded value alone (temperature: 21.5); this list says each field's unit and what its values are (kind: number, text, hex bytes, or json).",
        "responses": {
          "200": {
            "description": "Every field, in the order of the configuration's plans",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "items"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "items": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/FieldInfo"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/assets": {
      "get": {
        "operationId": "listAssets",
        "summary": "The asset register as the store has it (imported from [rules] register)",
        "parameters": [
          {
            "name": "location",
            "in": "query",
            "required": false,
            "description": "Only those of this location",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 200
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The assets",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "items"
                  ],
                  "properties": {
                    "items": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/RegisteredAsset"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/audits": {
      "get": {
        "operationId": "listAudits",
        "summary": "Audits, newest first",
        "parameters": [
          {
            "name": "location",
            "in": "query",
            "required": false,
            "description": "Only those of this location",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 200
            }
          },
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "1 to 100 (default 20)",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 100
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The audits",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "items"
                  ],
                  "properties": {
                    "items": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Audit"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/audits/{id}": {
      "get": {
        "operationId": "getAudit",
        "summary": "One audit with its results",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "schema": {
              "type": "integer",
              "format": "int64",
              "minimum": 1
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The audit and its results",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "audit",
                    "results"
                  ],
                  "properties": {
                    "audit": {
                      "$ref": "#/components/schemas/Audit"
                    },
                    "results": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/AuditResult"
                      }
                    }
                  }
                }
              }
            }
          },
          "404": {
            "description": "No such audit",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/writes": {
      "get": {
        "operationId": "listWrites",
        "summary": "Queued writes and their history, newest first",
        "parameters": [
          {
            "name": "state",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string",
              "enum": [
                "queued",
                "done",
                "failed",
                "expired",
                "cancelled",
                "rejected"
              ]
            }
          },
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "1 to 1000 (default 100)",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 1000
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The writes",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "items"
                  ],
                  "properties": {
                    "items": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/QueuedWrite"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      },
      "post": {
        "operationId": "queueWrite",
        "summary": "Queue a write for a tag, carried out when the tag is next in a reader's field (the write API)",
        "description": "Needs the write token; without [service] api-token-file the write API does not exist (404). An Idempotency-Key header queues a write once. POST /api/writes is an alias kept for one release.",
        "security": [
          {
            "writeToken": []
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "uid"
                ],
                "additionalProperties": false,
                "properties": {
                  "uid": {
                    "type": "string",
                    "description": "The tag, E0 first"
                  },
                  "block": {
                    "oneOf": [
                      {
                        "type": "string"
                      },
                      {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 65535
                      }
                    ],
                    "description": "The first block, 0xF9 or 249"
                  },
                  "data": {
                    "type": "string",
                    "description": "Hex bytes, whole blocks"
                  },
                  "flags": {
                    "type": "string",
                    "description": "Request flags (option, high-data-rate, …)"
                  },
                  "expires": {
                    "type": "string",
                    "description": "How long it may wait, 7d or 12h"
                  },
                  "reader": {
                    "type": "string",
                    "description": "Only this reader carries it out"
                  },
                  "lock": {
                    "type": "boolean",
                    "description": "Lock the blocks after writing them (irreversible; needs yes)"
                  },
                  "yes": {
                    "type": "boolean"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Queued",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "id",
                    "state"
                  ],
                  "properties": {
                    "id": {
                      "type": "integer"
                    },
                    "state": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "200": {
            "description": "The same Idempotency-Key again: the first write's id",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "id",
                    "state"
                  ],
                  "properties": {
                    "id": {
                      "type": "integer"
                    },
                    "state": {
                      "type": "string"
                    },
                    "replayed": {
                      "type": "boolean"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "Not a valid request (the reason names the key)",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "error"
                  ],
                  "properties": {
                    "error": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "No write token, or a wrong one",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "error"
                  ],
                  "properties": {
                    "error": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "404": {
            "description": "No write API here ([service] api-token-file not set)",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "413": {
            "description": "A body over 64 KiB",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "error"
                  ],
                  "properties": {
                    "error": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "422": {
            "description": "A valid request that cannot be carried out (an unknown reader, a block past the end, a full queue)",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "error"
                  ],
                  "properties": {
                    "error": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "503": {
            "description": "The store failed (worth a retry)",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "error"
                  ],
                  "properties": {
                    "error": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/writes/{id}": {
      "get": {
        "operationId": "getWrite",
        "summary": "One queued write",
        "parameters": [
          {
            "name": "id",
            "in": "path",
            "required": true,
            "schema": {
              "type": "integer",
              "format": "int64",
              "minimum": 1
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The write",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/QueuedWrite"
                }
              }
            }
          },
          "404": {
            "description": "No such write",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          }
        }
      }
    },
    "/stream": {
      "get": {
        "operationId": "stream",
        "summary": "Readings and events as Server-Sent Events, as they are committed, resumable",
        "description": "A text/event-stream (WHATWG HTML, Server-Sent Events) that does not end: each stored row as an event named reading or event, its data the row's JSON (the Reading and Event schemas, the same as the pages of /readings and /events), its id R-E (the ids of the last reading and the last event sent). A client that reconnects with the header Last-Event-ID (browsers' EventSource does) gets every row committed since, none twice; without it the stream starts with the rows committed from now on. A comment line every 15 s keeps idle connections open. docs/integrating.md, Live stream, has examples.",
        "parameters": [
          {
            "$ref": "#/components/parameters/uid"
          },
          {
            "$ref": "#/components/parameters/reader"
          },
          {
            "name": "kind",
            "in": "query",
            "required": false,
            "description": "What to send, comma-separated: reading, event, or event kinds (an event kind alone sends only events of those kinds). Default: every reading and event.",
            "schema": {
              "type": "string",
              "pattern": "^[a-z_]+(,[a-z_]+)*$"
            },
            "examples": {
              "readings": {
                "value": "reading"
              },
              "alarms": {
                "value": "violation,violation_ended"
              }
            }
          },
          {
            "name": "Last-Event-ID",
            "in": "header",
            "required": false,
            "description": "Where to resume: the id of the last event the client got (R-E: the last reading's and the last event's ids).",
            "schema": {
              "type": "string",
              "pattern": "^[0-9]+-[0-9]+$"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The stream: lines of event:, id: and data: (one JSON row), a blank line after each event; comment lines (:) keep it open",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "503": {
            "description": "As many clients as [service] stream-clients allows are connected; try again after Retry-After",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    }
  },
  "components": {
    "parameters": {
      "uid": {
        "name": "uid",
        "in": "query",
        "required": false,
        "description": "Only rows of this tag (16 hex digits, E0 first)",
        "schema": {
          "type": "string",
          "pattern": "^[Ee]0[0-9A-Fa-f]{14}$"
        }
      },
      "reader": {
        "name": "reader",
        "in": "query",
        "required": false,
        "description": "Only rows of this reader (its [[reader]] id)",
        "schema": {
          "type": "string",
          "minLength": 1,
          "maxLength": 64
        }
      },
      "since": {
        "name": "since",
        "in": "query",
        "required": false,
        "description": "From this time (RFC 3339: 2026-11-22T08:00:00Z; an age such as 1h or 7d is taken too)",
        "schema": {
          "type": "string",
          "format": "date-time"
        }
      },
      "until": {
        "name": "until",
        "in": "query",
        "required": false,
        "description": "Up to (not including) this time; the same forms as since",
        "schema": {
          "type": "string",
          "format": "date-time"
        }
      },
      "after_id": {
        "name": "after_id",
        "in": "query",
        "required": false,
        "description": "Only rows after this local id (a page's next_after_id)",
        "schema": {
          "type": "integer",
          "format": "int64",
          "minimum": 0
        }
      },
      "limit": {
        "name": "limit",
        "in": "query",
        "required": false,
        "description": "Rows per page, 1 to 1000 (default 100)",
        "schema": {
          "type": "integer",
          "format": "int32",
          "minimum": 1,
          "maximum": 1000
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "A parameter the API cannot take",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No read token, or a wrong one (a listener on a network address)",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Forbidden": {
        "description": "The read API is not open on this listener (a network address without read-token-file)",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unavailable": {
        "description": "The query ran past its time limit (2 s), or the store failed",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": [
          "error"
        ],
        "properties": {
          "error": {
            "type": "string",
            "description": "What is wrong"
          },
          "parameter": {
            "type": "string",
            "description": "The parameter it is about"
          }
        }
      },
      "Reading": {
        "type": "object",
        "description": "A stored reading as every surface has it; its decoded fields are members of their own",
        "required": [
          "key",
          "table",
          "time",
          "gateway",
          "uid",
          "block",
          "count",
          "data"
        ],
        "properties": {
          "key": {
            "type": "string",
            "description": "gateway/table/local id: the same row always has the same key"
          },
          "table": {
            "type": "string",
            "enum": [
              "readings"
            ]
          },
          "time": {
            "type": "string",
            "format": "date-time"
          },
          "gateway": {
            "type": "string"
          },
          "reader": {
            "type": [
              "string",
              "null"
            ]
          },
          "location": {
            "type": [
              "string",
              "null"
            ]
          },
          "uid": {
            "type": "string"
          },
          "asset_id": {
            "type": [
              "string",
              "null"
            ]
          },
          "block": {
            "type": "string",
            "description": "The first block, 0xF8 or 0x0100"
          },
          "count": {
            "type": "integer"
          },
          "data": {
            "type": "string",
            "description": "The blocks' bytes in hex"
          },
          "security": {
            "type": [
              "string",
              "null"
            ],
            "description": "One block security status byte per block, hex"
          }
        },
        "additionalProperties": true
      },
      "Event": {
        "type": "object",
        "required": [
          "key",
          "table",
          "time",
          "gateway",
          "kind",
          "name",
          "severity",
          "detail"
        ],
        "properties": {
          "key": {
            "type": "string"
          },
          "table": {
            "type": "string",
            "enum": [
              "events"
            ]
          },
          "time": {
            "type": "string",
            "format": "date-time"
          },
          "gateway": {
            "type": "string"
          },
          "reader": {
            "type": [
              "string",
              "null"
            ]
          },
          "location": {
            "type": [
              "string",
              "null"
            ]
          },
          "uid": {
            "type": [
              "string",
              "null"
            ]
          },
          "asset_id": {
            "type": [
              "string",
              "null"
            ]
          },
          "kind": {
            "type": "string",
            "enum": [
              "start",
              "stop",
              "arrival",
              "departure",
              "violation",
              "violation_ended",
              "error",
              "write_done",
              "write_failed",
              "write_expired",
              "audit_finished",
              "reader_down",
              "reader_up",
              "access",
              "acknowledged"
            ],
            "description": "What happened (docs/json.md lists the kinds)"
          },
          "name": {
            "type": "string",
            "description": "The rule (violation, violation_ended), the error (error), the write's id (write_*), the audit's id (audit_finished); empty for the other kinds"
          },
          "severity": {
            "type": "string",
            "enum": [
              "info",
              "warning",
              "critical"
            ]
          },
          "detail": {
            "type": "string"
          },
          "origin": {
            "type": "string",
            "description": "Who asked for what it reports: cli, queue, audit, api, opcua, then ':' and the client's name where there is one; absent for what the agent sees by itself (docs/json.md)"
          }
        }
      },
      "ReadingPage": {
        "type": "object",
        "required": [
          "items"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Reading"
            }
          },
          "next_after_id": {
            "type": [
              "integer",
              "null"
            ],
            "format": "int64",
            "description": "Pass it as after_id for the next page; null when this page was the last"
          }
        }
      },
      "EventPage": {
        "type": "object",
        "required": [
          "items"
        ],
        "properties": {
          "items": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Event"
            }
          },
          "next_after_id": {
            "type": [
              "integer",
              "null"
            ],
            "format": "int64"
          }
        }
      },
      "Asset": {
        "type": "object",
        "required": [
          "asset_id"
        ],
        "properties": {
          "asset_id": {
            "type": "string"
          },
          "name": {
            "type": [
              "string",
              "null"
            ]
          },
          "location": {
            "type": [
              "string",
              "null"
            ]
          }
        }
      },
      "Tag": {
        "type": "object",
        "required": [
          "uid",
          "manufacturer_code",
          "first_seen",
          "last_seen"
        ],
        "properties": {
          "uid": {
            "type": "string"
          },
          "manufacturer_code": {
            "type": "string",
            "description": "The IC manufacturer's code (UID byte 6, ISO/IEC 7816-6), as 0x and two hex digits"
          },
          "manufacturer": {
            "type": "string",
            "description": "The manufacturer's registered name (absent for a code without one)"
          },
          "model": {
            "type": [
              "string",
              "null"
            ]
          },
          "first_seen": {
            "type": "string",
            "format": "date-time"
          },
          "last_seen": {
            "type": "string",
            "format": "date-time"
          },
          "last_reader": {
            "type": [
              "string",
              "null"
            ]
          },
          "last_location": {
            "type": [
              "string",
              "null"
            ]
          },
          "asset": {
            "oneOf": [
              {
                "$ref": "#/components/schemas/Asset"
              },
              {
                "type": "null"
              }
            ]
          },
          "last_reading": {
            "oneOf": [
              {
                "$ref": "#/components/schemas/Reading"
              },
              {
                "type": "null"
              }
            ]
          },
          "originality": {
            "type": "string",
            "description": "The verdict on its originality signature, once an originality rule had it checked, e.g. verified (NXP key for ICODE SLIX2/DNA/3)"
          }
        }
      },
      "TagInField": {
        "type": "object",
        "required": [
          "uid"
        ],
        "properties": {
          "uid": {
            "type": "string"
          },
          "asset_id": {
            "type": [
              "string",
              "null"
            ]
          },
          "asset_name": {
            "type": "string",
            "description": "The register's name of the asset"
          },
          "last_reading": {
            "oneOf": [
              {
                "$ref": "#/components/schemas/Reading"
              },
              {
                "type": "null"
              }
            ]
          }
        }
      },
      "ReaderField": {
        "type": "object",
        "required": [
          "id",
          "up",
          "tags"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "location": {
            "type": [
              "string",
              "null"
            ]
          },
          "up": {
            "type": "boolean",
            "description": "Whether its last cycle worked"
          },
          "tags": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/TagInField"
            }
          }
        }
      },
      "Field": {
        "type": "object",
        "required": [
          "readers"
        ],
        "properties": {
          "readers": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/ReaderField"
            }
          }
        }
      },
      "RegisteredAsset": {
        "type": "object",
        "required": [
          "uid",
          "asset_id"
        ],
        "properties": {
          "uid": {
            "type": "string"
          },
          "asset_id": {
            "type": "string"
          },
          "name": {
            "type": [
              "string",
              "null"
            ]
          },
          "location": {
            "type": [
              "string",
              "null"
            ]
          },
          "expected": {
            "type": "object",
            "description": "The register's other columns (what audits check), by column name",
            "additionalProperties": {
              "type": "string"
            }
          }
        }
      },
      "Audit": {
        "type": "object",
        "description": "An audit as the export and the outputs have it",
        "required": [
          "key",
          "table",
          "id",
          "started",
          "finished",
          "location"
        ],
        "properties": {
          "key": {
            "type": "string"
          },
          "table": {
            "type": "string",
            "enum": [
              "audits"
            ]
          },
          "id": {
            "type": "integer"
          },
          "started": {
            "type": "string",
            "format": "date-time"
          },
          "finished": {
            "type": "string",
            "format": "date-time"
          },
          "location": {
            "type": "string"
          }
        },
        "additionalProperties": true
      },
      "AuditResult": {
        "type": "object",
        "required": [
          "key",
          "table",
          "uid",
          "status"
        ],
        "properties": {
          "key": {
            "type": "string"
          },
          "table": {
            "type": "string",
            "enum": [
              "audit_results"
            ]
          },
          "uid": {
            "type": "string"
          },
          "status": {
            "type": "string"
          }
        },
        "additionalProperties": true
      },
      "QueuedWrite": {
        "type": "object",
        "required": [
          "id",
          "operation",
          "uid",
          "block",
          "data",
          "created",
          "state"
        ],
        "properties": {
          "id": {
            "type": "integer"
          },
          "operation": {
            "type": "string",
            "enum": [
              "write",
              "write-lock",
              "lock"
            ]
          },
          "uid": {
            "type": "string"
          },
          "block": {
            "type": "string"
          },
          "data": {
            "type": "string"
          },
          "flags": {
            "type": "string",
            "description": "Request flags the write asked for, as 0x and two hex digits"
          },
          "reader": {
            "type": [
              "string",
              "null"
            ]
          },
          "created": {
            "type": "string",
            "format": "date-time"
          },
          "expires": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "state": {
            "type": "string",
            "enum": [
              "queued",
              "done",
              "failed",
              "expired",
              "cancelled",
              "rejected"
            ]
          },
          "result": {
            "type": [
              "string",
              "null"
            ]
          },
          "finished": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "origin": {
            "type": "string",
            "description": "Who queued it: api (this API), cli (vlogger write --when-seen); absent for writes queued before the queue kept it"
          }
        }
      },
      "FieldInfo": {
        "type": "object",
        "required": [
          "name",
          "kind"
        ],
        "additionalProperties": false,
        "properties": {
          "name": {
            "type": "string"
          },
          "unit": {
            "type": "string",
            "description": "The plan's unit (absent for a field without one)"
          },
          "kind": {
            "type": "string",
            "enum": [
              "number",
              "text",
              "hex",
              "json"
            ]
          }
        }
      }
    },
    "securitySchemes": {
      "readToken": {
        "type": "http",
        "scheme": "bearer",
        "description": "[service] read-token-file's token; needed on a listener that is not a loopback address"
      },
      "writeToken": {
        "type": "http",
        "scheme": "bearer",
        "description": "[service] api-token-file's token (the write API; served on a loopback listener only)"
      }
    }
  },
  "security": [
    {},
    {
      "readToken": []
    }
  ]
}
"""
}
